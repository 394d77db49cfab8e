// A scripted stand-in for a chip function: registers in a map, host memory in process,
// and a minimal admin-queue "firmware" that consumes SQEs and writes phase-tagged CQEs
// exactly as the device interface prescribes. Lets the admin queue be tested without
// jal-emu.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <jal/hw/admin.h>
#include <jal/hw/status.h>

#include "backend/backend.hpp"

namespace jal::testing {

class FakeBackend final : public backend::Backend {
public:
    FakeBackend();

    uint32_t read32(uint32_t bar, uint32_t offset) override;
    void write32(uint32_t bar, uint32_t offset, uint32_t value) override;
    void write64(uint32_t bar, uint32_t offset, uint64_t value) override;
    std::unique_ptr<backend::HostMemory> share_host_memory(size_t bytes) override;
    void bind_irq(uint32_t vector, int eventfd) override;
    std::shared_ptr<backend::DoorbellMapping> map_doorbells() override;
    const backend::BackendIdentity& identity() const override { return identity_; }
    std::vector<OtherClient> other_clients() override { return {}; }

    // --- the scripted device side ---
    // Completes commands as soon as the SQ tail doorbell rings (else: complete_pending).
    bool auto_complete = true;
    // Enabling the admin queue reports ERROR with this status (OK: becomes READY).
    jal_status refuse_enable = JAL_STATUS_OK;
    // Enabling never reports READY.
    bool never_ready = false;
    // A firmware busy on a long command: JAL_REG_ADMIN_PROGRESS moves on at each of the next
    // `busy_looks` reads of it, and the commands fetched so far complete at the last one.
    size_t busy_looks = 0;
    // Moves JAL_REG_ADMIN_PROGRESS on at every read and never completes anything.
    bool busy_forever = false;
    // The next read of JAL_REG_RESET_GENERATION finds that the device has just answered every
    // fetched command and then reset (the generation moved on): a reset right behind its
    // command's completion, as FW_ACTIVATE and RESET cause.
    bool answer_then_reset_at_generation_read = false;
    // Computes each completion; default: OK, result = cdw[0].
    std::function<jal_admin_cqe(const jal_admin_sqe&)> handler;

    // Executes up to `max` fetched-but-unanswered commands; returns how many.
    size_t complete_pending(size_t max = SIZE_MAX);
    size_t pending() const;
    uint32_t cq_head_doorbell() const;
    // Set if the device ever had to write a CQE over one the host had not consumed.
    bool cq_overflowed() const;
    std::vector<jal_admin_sqe> received() const;

    // User-queue side: doorbell pages in plain memory, kicks counted, interrupts raised
    // by writing the vector's bound eventfd.
    std::byte* doorbell_page(uint32_t queue_id);
    uint64_t kicks() const;
    void raise_irq(uint32_t vector);
    int irq_eventfd(uint32_t vector) const;

private:
    std::byte* translate(uint64_t bus_addr, size_t len);
    size_t complete_locked(size_t max);

    backend::BackendIdentity identity_;
    mutable std::mutex mutex_;
    std::map<uint32_t, uint32_t> regs_;
    std::map<uint64_t, std::pair<std::byte*, size_t>> regions_;  // bus addr -> host span
    uint64_t next_bus_ = 0x1000'0000;
    int irq_fd_ = -1;
    std::map<uint32_t, int> irq_fds_;  // vector -> eventfd (all vectors)
    std::shared_ptr<backend::DoorbellMapping> doorbells_;
    uint16_t sq_head_ = 0, cq_tail_ = 0, phase_ = 1;
    bool overflowed_ = false;
    std::vector<jal_admin_sqe> received_;
};

}  // namespace jal::testing
