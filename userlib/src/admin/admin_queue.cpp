#include "admin_queue.hpp"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <sys/eventfd.h>
#include <thread>

#include <jal/error.hpp>
#include <jal/hw/pci.h>
#include <jal/hw/regs.h>

#include "admin_names.hpp"
#include "progress_deadline.hpp"

namespace jal::admin {

namespace {

// However interrupts behave, the ring is re-checked at least this often.
constexpr std::chrono::milliseconds kRecheckInterval{50};

template <typename T>
T* as(backend::HostMemory& memory)
{
    return reinterpret_cast<T*>(memory.data());
}

std::unique_ptr<backend::HostMemory> share(backend::Backend& backend, size_t bytes)
{
    return backend.share_host_memory(bytes);
}

}  // namespace

AdminQueue::AdminQueue(backend::Backend& backend, const AdminQueueConfig& config)
    : backend_(backend), sq_memory_(share(backend, sizeof(jal_admin_sqe) * config.entries)),
      cq_memory_(share(backend, sizeof(jal_admin_cqe) * config.entries)),
      ring_(as<jal_admin_sqe>(*sq_memory_), as<jal_admin_cqe>(*cq_memory_), config.entries),
      max_wait_(config.max_wait)
{
    irq_eventfd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!irq_eventfd_)
        throw Error(JAL_STATUS_IO_ERROR, std::string("eventfd: ") + std::strerror(errno));
    enable(config.enable_timeout);
}

AdminQueue::~AdminQueue()
{
    try {
        backend_.write32(JAL_BAR_REGS, JAL_REG_ADMIN_CTRL, 0);
        backend_.bind_irq(JAL_MSIX_VECTOR_ADMIN, -1);
    } catch (const Error&) {
        // The device or the connection is gone: nothing left to tell it.
    }
}

void AdminQueue::enable(std::chrono::milliseconds timeout)
{
    // Another function's long command may hold the firmware before it looks at this queue.
    ProgressDeadline deadline(backend_, util::Deadline(timeout), max_wait_);
    auto reg_write = [&](uint32_t reg, uint32_t value) {
        backend_.write32(JAL_BAR_REGS, reg, value);
    };

    generation_ = backend_.read32(JAL_BAR_REGS, JAL_REG_RESET_GENERATION);
    // A previous owner of this function may have left the queue enabled.
    reg_write(JAL_REG_ADMIN_CTRL, 0);
    while (backend_.read32(JAL_BAR_REGS, JAL_REG_ADMIN_STATUS) & JAL_ADMIN_STATUS_READY) {
        if (deadline.expired())
            throw Error(JAL_STATUS_TIMEOUT,
                        "admin queue did not stop within " + util::describe(timeout));
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }

    uint64_t sq = sq_memory_->bus_addr(), cq = cq_memory_->bus_addr();
    reg_write(JAL_REG_ADMIN_SQ_BASE_LO, static_cast<uint32_t>(sq));
    reg_write(JAL_REG_ADMIN_SQ_BASE_HI, static_cast<uint32_t>(sq >> 32));
    reg_write(JAL_REG_ADMIN_CQ_BASE_LO, static_cast<uint32_t>(cq));
    reg_write(JAL_REG_ADMIN_CQ_BASE_HI, static_cast<uint32_t>(cq >> 32));
    reg_write(JAL_REG_ADMIN_QSIZE, uint32_t{ring_.entries()} | uint32_t{ring_.entries()} << 16);
    backend_.bind_irq(JAL_MSIX_VECTOR_ADMIN, irq_eventfd_.get());
    reg_write(JAL_REG_ADMIN_CTRL, JAL_ADMIN_CTRL_ENABLE);

    for (;;) {
        uint32_t status = backend_.read32(JAL_BAR_REGS, JAL_REG_ADMIN_STATUS);
        if (status & JAL_ADMIN_STATUS_ERROR) {
            auto why = static_cast<jal_status>(status >> 16);
            throw Error(why == JAL_STATUS_OK ? JAL_STATUS_INTERNAL : why,
                        std::string("device refused to enable the admin queue: ") +
                            jal_status_name(why));
        }
        if (status & JAL_ADMIN_STATUS_READY) return;
        if (deadline.expired())
            throw Error(JAL_STATUS_TIMEOUT, "admin queue not ready within " +
                                                util::describe(timeout) +
                                                " of enabling it (firmware not serving it?)");
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
}

uint16_t AdminQueue::allocate_cid_locked()
{
    // At most entries-1 commands are in flight, so a free cid is always near.
    for (;;) {
        uint16_t cid = next_cid_++;
        if (!outstanding_.count(cid) && !completed_.count(cid)) return cid;
    }
}

uint16_t AdminQueue::submit_locked(jal_admin_sqe sqe)
{
    sqe.cid = allocate_cid_locked();
    uint16_t tail = ring_.push(sqe);
    outstanding_[sqe.cid] = sqe.opcode;
    backend_.write32(JAL_BAR_REGS, JAL_REG_ADMIN_SQ_TAIL, tail);
    return sqe.cid;
}

std::optional<uint16_t> AdminQueue::try_submit(const jal_admin_sqe& sqe)
{
    std::lock_guard lock(mutex_);
    reap_locked();
    if (ring_.full()) return std::nullopt;
    return submit_locked(sqe);
}

uint16_t AdminQueue::submit(const jal_admin_sqe& sqe, const util::Deadline& deadline)
{
    for (;;) {
        if (auto cid = try_submit(sqe)) return *cid;
        if (deadline.expired())
            throw Error(JAL_STATUS_BUSY, "admin queue full: " + std::to_string(in_flight()) +
                                             " commands in flight for " +
                                             util::describe(deadline.budget()));
        wait_for_interrupt(deadline);
    }
}

void AdminQueue::reap_locked()
{
    bool any = false;
    while (auto cqe = ring_.pop()) {
        any = true;
        auto it = outstanding_.find(cqe->cid);
        if (it == outstanding_.end())
            continue;  // a completion for no command of ours: firmware bug, nothing to wake
        outstanding_.erase(it);
        if (abandoned_.erase(cqe->cid)) continue;
        completed_[cqe->cid] =
            Completion{cqe->cid, static_cast<jal_status>(cqe->status), cqe->result};
    }
    if (any) backend_.write32(JAL_BAR_REGS, JAL_REG_ADMIN_CQ_HEAD, ring_.cq_head());
}

void AdminQueue::wait_for_interrupt(const util::Deadline& deadline)
{
    pollfd pfd{irq_eventfd_.get(), POLLIN, 0};
    if (::poll(&pfd, 1, deadline.poll_ms(kRecheckInterval)) > 0) {
        uint64_t count;
        // Drain; several waiters may race for it and that is fine, each re-checks the ring.
        [[maybe_unused]] ssize_t n = ::read(irq_eventfd_.get(), &count, sizeof count);
    }
}

void AdminQueue::lost_to_reset_locked(uint16_t cid, uint8_t opcode, uint32_t now)
{
    abandoned_.insert(cid);
    throw Error(JAL_STATUS_DEVICE_RESET,
                "admin command " + opcode_name(opcode) +
                    " lost: the device was reset while it was in flight (reset generation " +
                    std::to_string(generation_) + " -> " + std::to_string(now) + ")");
}

Completion AdminQueue::wait(uint16_t cid, const util::Deadline& budget)
{
    ProgressDeadline deadline(backend_, budget, max_wait_);
    for (bool first = true;; first = false) {
        {
            std::lock_guard lock(mutex_);
            // Woken without our completion: a reset wakes every vector, and the queue it
            // disabled will never answer, so tell that apart from a slow firmware. The
            // generation is read before the reap: a command the device answered just before
            // it reset (FW_ACTIVATE, RESET) is in the ring by then, and completes.
            const uint32_t generation =
                first ? generation_ : backend_.read32(JAL_BAR_REGS, JAL_REG_RESET_GENERATION);
            reap_locked();
            if (auto it = completed_.find(cid); it != completed_.end()) {
                Completion done = it->second;
                completed_.erase(it);
                return done;
            }
            auto it = outstanding_.find(cid);
            if (it == outstanding_.end())
                throw Error(JAL_STATUS_INVALID_FIELD,
                            "no admin command with cid " + std::to_string(cid) + " is in flight");
            if (generation != generation_) lost_to_reset_locked(cid, it->second, generation);
            if (deadline.expired()) {
                abandoned_.insert(cid);
                throw Error(JAL_STATUS_TIMEOUT, "admin command " + opcode_name(it->second) +
                                                    " timed out " + deadline.why());
            }
        }
        wait_for_interrupt(deadline.current());
    }
}

Completion AdminQueue::execute(const jal_admin_sqe& sqe, std::chrono::milliseconds timeout)
{
    util::Deadline deadline(timeout);
    return wait(submit(sqe, deadline), deadline);
}

unsigned AdminQueue::in_flight() const
{
    std::lock_guard lock(mutex_);
    return ring_.in_flight();
}

}  // namespace jal::admin
