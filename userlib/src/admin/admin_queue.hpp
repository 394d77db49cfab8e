// The admin queue pair of one host function: rings in shared host memory, enabling,
// command ids, doorbells, and waiting for completions on the admin MSI-X vector.
// Thread-safe: any number of threads may submit and wait at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <vector>

#include <jal/hw/admin.h>
#include <jal/hw/status.h>

#include "../backend/backend.hpp"
#include "../util/deadline.hpp"
#include "../util/unique_fd.hpp"
#include "admin_ring.hpp"

namespace jal::admin {

struct Completion {
    uint16_t cid = 0;
    jal_status status = JAL_STATUS_OK;
    uint32_t result = 0;
};

struct AdminQueueConfig {
    uint16_t entries = 32;
    std::chrono::milliseconds enable_timeout{2000};
    // Timeouts count time without firmware progress (JAL_REG_ADMIN_PROGRESS); a wait ends
    // after this long in all even if the firmware keeps moving.
    std::chrono::milliseconds max_wait{std::chrono::minutes(2)};
};

class AdminQueue {
public:
    // Allocates the rings, binds the admin vector and enables the queue. Throws
    // jal::Error: NOT_READY / the device's status when it refuses, TIMEOUT when it
    // never answers.
    AdminQueue(backend::Backend& backend, const AdminQueueConfig& config = {});
    // Disables the queue and unbinds the vector; commands still in flight are dropped.
    ~AdminQueue();
    AdminQueue(const AdminQueue&) = delete;
    AdminQueue& operator=(const AdminQueue&) = delete;

    // Submits without waiting for room: nullopt when the ring is full. The cid in `sqe`
    // is replaced by a free one, which is returned.
    std::optional<uint16_t> try_submit(const jal_admin_sqe& sqe);
    // Submits, waiting for room until `deadline` (then throws BUSY).
    uint16_t submit(const jal_admin_sqe& sqe, const util::Deadline& deadline);
    // Waits for the completion of `cid`. On timeout (the deadline's budget passed without
    // firmware progress, or max_wait in all) throws TIMEOUT and abandons the command: its
    // completion, if it ever comes, is discarded.
    Completion wait(uint16_t cid, const util::Deadline& deadline);
    // submit + wait with one time budget.
    Completion execute(const jal_admin_sqe& sqe, std::chrono::milliseconds timeout);

    unsigned in_flight() const;
    uint16_t entries() const { return ring_.entries(); }

    // JAL_REG_RESET_GENERATION when the queue was enabled: a reset since then took it away.
    uint32_t reset_generation() const { return generation_; }

private:
    void enable(std::chrono::milliseconds timeout);
    // Throws DEVICE_RESET: the chip was reset since enable() (generation `now`) and the
    // command never completed.
    [[noreturn]] void lost_to_reset_locked(uint16_t cid, uint8_t opcode, uint32_t now);
    uint16_t allocate_cid_locked();
    uint16_t submit_locked(jal_admin_sqe sqe);
    void reap_locked();
    void wait_for_interrupt(const util::Deadline& deadline);

    backend::Backend& backend_;
    uint32_t generation_ = 0;
    std::unique_ptr<backend::HostMemory> sq_memory_;
    std::unique_ptr<backend::HostMemory> cq_memory_;
    util::UniqueFd irq_eventfd_;
    mutable std::mutex mutex_;
    AdminRing ring_;
    const std::chrono::milliseconds max_wait_;
    uint16_t next_cid_ = 0;
    std::map<uint16_t, uint8_t> outstanding_;   // cid -> opcode, submitted and not yet reaped
    std::set<uint16_t> abandoned_;              // waiters gave up on these
    std::map<uint16_t, Completion> completed_;  // reaped, waiting for their waiter
};

}  // namespace jal::admin
