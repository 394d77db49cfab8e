#include "fake_backend.hpp"

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <unistd.h>

#include <jal/hw/pci.h>
#include <jal/hw/regs.h>

namespace jal::testing {

namespace {

class FakeMemory final : public backend::HostMemory {
public:
    FakeMemory(size_t size, uint64_t bus) : storage_(size), bus_(bus) {}
    std::byte* data() override { return storage_.data(); }
    size_t size() const override { return storage_.size(); }
    uint64_t bus_addr() const override { return bus_; }

private:
    std::vector<std::byte> storage_;
    uint64_t bus_;
};

}  // namespace

FakeBackend::FakeBackend()
{
    identity_.transport = "fake";
    handler = [](const jal_admin_sqe& sqe) {
        jal_admin_cqe cqe{};
        cqe.result = sqe.cdw[0];
        return cqe;
    };
}

uint32_t FakeBackend::read32(uint32_t bar, uint32_t offset)
{
    std::lock_guard lock(mutex_);
    if (bar == JAL_BAR_REGS && offset == JAL_REG_ADMIN_STATUS) {
        if (!(regs_[JAL_REG_ADMIN_CTRL] & JAL_ADMIN_CTRL_ENABLE) || never_ready) return 0;
        if (refuse_enable != JAL_STATUS_OK)
            return JAL_ADMIN_STATUS_ERROR | uint32_t{refuse_enable} << 16;
        return JAL_ADMIN_STATUS_READY;
    }
    if (bar == JAL_BAR_REGS && offset == JAL_REG_RESET_GENERATION &&
        answer_then_reset_at_generation_read) {
        answer_then_reset_at_generation_read = false;
        complete_locked(SIZE_MAX);
        ++regs_[offset];
    }
    if (bar == JAL_BAR_REGS && offset == JAL_REG_ADMIN_PROGRESS && (busy_forever || busy_looks)) {
        ++regs_[offset];
        if (!busy_forever && --busy_looks == 0) complete_locked(SIZE_MAX);
    }
    return regs_[offset];
}

void FakeBackend::write32(uint32_t bar, uint32_t offset, uint32_t value)
{
    std::lock_guard lock(mutex_);
    if (bar != JAL_BAR_REGS) return;
    regs_[offset] = value;
    if (offset == JAL_REG_ADMIN_CTRL && !(value & JAL_ADMIN_CTRL_ENABLE)) {
        sq_head_ = cq_tail_ = 0;
        phase_ = 1;
    }
    if (offset == JAL_REG_ADMIN_SQ_TAIL && auto_complete) complete_locked(SIZE_MAX);
}

void FakeBackend::write64(uint32_t, uint32_t, uint64_t) {}

std::unique_ptr<backend::HostMemory> FakeBackend::share_host_memory(size_t bytes)
{
    std::lock_guard lock(mutex_);
    size_t size = (bytes + 4095) / 4096 * 4096;
    auto memory = std::make_unique<FakeMemory>(size, next_bus_);
    regions_[next_bus_] = {memory->data(), size};
    next_bus_ += size + 4096;
    return memory;
}

void FakeBackend::bind_irq(uint32_t vector, int eventfd)
{
    std::lock_guard lock(mutex_);
    if (vector == JAL_MSIX_VECTOR_ADMIN) irq_fd_ = eventfd;
    irq_fds_[vector] = eventfd;
}

namespace {

class FakeDoorbells final : public backend::DoorbellMapping {
public:
    FakeDoorbells() : bar_(JAL_BAR_DOORBELL_SIZE) {}
    std::byte* page(uint32_t queue_id) override
    {
        return bar_.data() + size_t{queue_id} * JAL_DOORBELL_STRIDE;
    }
    void kick() override { kicks.fetch_add(1); }
    std::atomic<uint64_t> kicks{0};

private:
    std::vector<std::byte> bar_;
};

}  // namespace

std::shared_ptr<backend::DoorbellMapping> FakeBackend::map_doorbells()
{
    std::lock_guard lock(mutex_);
    if (!doorbells_) doorbells_ = std::make_shared<FakeDoorbells>();
    return doorbells_;
}

std::byte* FakeBackend::doorbell_page(uint32_t queue_id)
{
    return map_doorbells()->page(queue_id);
}

uint64_t FakeBackend::kicks() const
{
    std::lock_guard lock(mutex_);
    return doorbells_ ? static_cast<FakeDoorbells&>(*doorbells_).kicks.load() : 0;
}

void FakeBackend::raise_irq(uint32_t vector)
{
    int fd = irq_eventfd(vector);
    uint64_t one = 1;
    if (fd >= 0) [[maybe_unused]]
        ssize_t n = ::write(fd, &one, sizeof one);
}

int FakeBackend::irq_eventfd(uint32_t vector) const
{
    std::lock_guard lock(mutex_);
    auto it = irq_fds_.find(vector);
    return it == irq_fds_.end() ? -1 : it->second;
}

std::byte* FakeBackend::translate(uint64_t bus_addr, size_t len)
{
    auto it = regions_.upper_bound(bus_addr);
    if (it == regions_.begin())
        throw std::runtime_error("fake device: DMA to unmapped bus address");
    --it;
    if (bus_addr + len > it->first + it->second.second)
        throw std::runtime_error("fake device: DMA past the end of a region");
    return it->second.first + (bus_addr - it->first);
}

size_t FakeBackend::complete_locked(size_t max)
{
    uint16_t entries = static_cast<uint16_t>(regs_[JAL_REG_ADMIN_QSIZE] & 0xffff);
    uint16_t tail = static_cast<uint16_t>(regs_[JAL_REG_ADMIN_SQ_TAIL]);
    uint64_t sq_base = regs_[JAL_REG_ADMIN_SQ_BASE_LO] | uint64_t{regs_[JAL_REG_ADMIN_SQ_BASE_HI]}
                                                             << 32;
    uint64_t cq_base = regs_[JAL_REG_ADMIN_CQ_BASE_LO] | uint64_t{regs_[JAL_REG_ADMIN_CQ_BASE_HI]}
                                                             << 32;
    size_t done = 0;
    while (done < max && sq_head_ != tail) {
        jal_admin_sqe sqe;
        std::memcpy(&sqe, translate(sq_base + sq_head_ * sizeof sqe, sizeof sqe), sizeof sqe);
        received_.push_back(sqe);
        sq_head_ = static_cast<uint16_t>((sq_head_ + 1) % entries);
        if (uint32_t((cq_tail_ + 1) % entries) == regs_[JAL_REG_ADMIN_CQ_HEAD]) overflowed_ = true;
        jal_admin_cqe cqe = handler(sqe);
        cqe.cid = sqe.cid;
        cqe.sq_head = sq_head_;
        cqe.flags = phase_;
        auto* slot = reinterpret_cast<jal_admin_cqe*>(
            translate(cq_base + cq_tail_ * sizeof cqe, sizeof cqe));
        // Flags go last, like the device: the body without them, then the flags alone
        // (the host polls them while the body is written).
        std::memcpy(slot, &cqe, offsetof(jal_admin_cqe, flags));
        __atomic_store_n(&slot->flags, cqe.flags, __ATOMIC_RELEASE);
        if (++cq_tail_ == entries) {
            cq_tail_ = 0;
            phase_ ^= 1;
        }
        done++;
    }
    if (done && irq_fd_ >= 0) {
        uint64_t one = 1;
        [[maybe_unused]] ssize_t n = ::write(irq_fd_, &one, sizeof one);
    }
    return done;
}

size_t FakeBackend::complete_pending(size_t max)
{
    std::lock_guard lock(mutex_);
    return complete_locked(max);
}

size_t FakeBackend::pending() const
{
    std::lock_guard lock(mutex_);
    auto regs = regs_;
    uint16_t entries = static_cast<uint16_t>(regs[JAL_REG_ADMIN_QSIZE] & 0xffff);
    return entries ? (regs[JAL_REG_ADMIN_SQ_TAIL] + entries - sq_head_) % entries : 0;
}

uint32_t FakeBackend::cq_head_doorbell() const
{
    std::lock_guard lock(mutex_);
    auto it = regs_.find(JAL_REG_ADMIN_CQ_HEAD);
    return it == regs_.end() ? 0 : it->second;
}

bool FakeBackend::cq_overflowed() const
{
    std::lock_guard lock(mutex_);
    return overflowed_;
}

std::vector<jal_admin_sqe> FakeBackend::received() const
{
    std::lock_guard lock(mutex_);
    return received_;
}

}  // namespace jal::testing
