// User-queue ids (0..JAL_MAX_USER_QUEUES-1, each with its doorbell page in BAR2) and the
// command-processor engines behind them. The firmware only describes, enables, disables
// and resets engines and reports their state; the command processor runs the rings.
#pragma once

#include <array>
#include <cstdint>

#include "firmware/queues/cp.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/pci.h"

namespace jal::fw::queues {

class UserQueues {
public:
    // Forgets every queue and disables every engine (a management-core reset may leave
    // engines running a previous boot's queues).
    void init();

    // Picks a free id (rotating, so a dying client's late doorbell writes do not hit the
    // next client's queue at once) and enables its engine. JAL_STATUS_BUSY when none.
    [[nodiscard]] std::uint32_t create(const cp::QueueConfig& cfg, std::uint32_t& qid);
    // INVALID_FIELD for an id that is not a live queue, PERMISSION for another function's.
    [[nodiscard]] std::uint32_t check_owner(std::uint32_t fn, std::uint32_t qid) const;
    void destroy(std::uint32_t qid);
    // Destroys every queue of the context; returns how many.
    std::uint32_t destroy_context(std::uint32_t ctx);
    // Engine state plus the queue's record. Returns true when the queue has news worth a
    // log entry since the previous status read: more failed packets, or it stopped in
    // JAL_QUEUE_ERROR (so the caller logs each problem once).
    bool status(std::uint32_t qid, jal_queue_status& st);
    void reset(std::uint32_t qid);

    std::uint32_t live() const;
    std::uint32_t context_of(std::uint32_t qid) const
    {
        return qid < JAL_MAX_USER_QUEUES ? q_[qid].ctx : 0;
    }

private:
    struct Queue {
        std::uint8_t ctx = 0;  // 0: id free
        std::uint8_t fn = 0;
        std::uint32_t size = 0;
        std::uint32_t errors_seen = 0;
        std::uint32_t state_seen = 0;
    };
    std::array<Queue, JAL_MAX_USER_QUEUES> q_{};
    std::uint32_t next_ = 0;
};

}  // namespace jal::fw::queues
