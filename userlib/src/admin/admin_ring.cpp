#include "admin_ring.hpp"

#include <atomic>
#include <cstring>

#include <jal/error.hpp>
#include <jal/hw/regs.h>

namespace jal::admin {

AdminRing::AdminRing(jal_admin_sqe* sq, jal_admin_cqe* cq, uint16_t entries)
    : sq_(sq), cq_(cq), entries_(entries)
{
    if (entries < JAL_ADMIN_QSIZE_MIN || entries > JAL_ADMIN_QSIZE_MAX)
        throw Error(JAL_STATUS_INVALID_FIELD, "admin ring of " + std::to_string(entries) +
                                                  " entries (allowed " +
                                                  std::to_string(JAL_ADMIN_QSIZE_MIN) + ".." +
                                                  std::to_string(JAL_ADMIN_QSIZE_MAX) + ")");
}

bool AdminRing::full() const
{
    uint16_t used = static_cast<uint16_t>((sq_tail_ + entries_ - sq_head_) % entries_);
    return used + 1u >= entries_ || in_flight_ + 1u >= entries_;
}

uint16_t AdminRing::push(const jal_admin_sqe& sqe)
{
    if (full()) throw Error(JAL_STATUS_BUSY, "admin submission ring full");
    std::memcpy(&sq_[sq_tail_], &sqe, sizeof sqe);
    sq_tail_ = static_cast<uint16_t>((sq_tail_ + 1) % entries_);
    in_flight_++;
    // The device may fetch the entry as soon as it sees the new tail.
    std::atomic_thread_fence(std::memory_order_release);
    return sq_tail_;
}

std::optional<jal_admin_cqe> AdminRing::pop()
{
    jal_admin_cqe* slot = &cq_[cq_head_];
    // The device writes flags last: once the phase matches, the rest of the entry is there,
    // provided nothing of it is read before the flags (acquire).
    uint16_t flags = std::atomic_ref<uint16_t>(slot->flags).load(std::memory_order_acquire);
    if ((flags & JAL_ADMIN_CQE_PHASE) != phase_) return std::nullopt;
    jal_admin_cqe cqe;
    std::memcpy(&cqe, slot, sizeof cqe);
    cq_head_ = static_cast<uint16_t>(cq_head_ + 1);
    if (cq_head_ == entries_) {
        cq_head_ = 0;
        phase_ ^= 1;
    }
    if (cqe.sq_head < entries_) sq_head_ = cqe.sq_head;
    if (in_flight_ > 0) in_flight_--;
    return cqe;
}

}  // namespace jal::admin
