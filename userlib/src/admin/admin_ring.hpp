// The host's half of the admin submission/completion ring pair, over memory the device
// also sees: slot accounting, the phase bit, and the memory ordering the protocol needs.
// No locking and no device access; AdminQueue supplies both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include <jal/hw/admin.h>

namespace jal::admin {

class AdminRing {
public:
    // `sq` holds `entries` SQEs, `cq` as many CQEs, the CQ zero-filled.
    AdminRing(jal_admin_sqe* sq, jal_admin_cqe* cq, uint16_t entries);

    uint16_t entries() const { return entries_; }

    // Commands submitted whose completion has not been popped. One slot always stays empty
    // so a full ring is distinguishable from an empty one (tail == head means empty), and
    // the CQ can never hold more completions than it has entries.
    unsigned in_flight() const { return in_flight_; }
    bool full() const;

    // Copies `sqe` into the slot at the tail and returns the new tail for the doorbell.
    // The entry is complete in memory (release fence) before the tail is returned.
    uint16_t push(const jal_admin_sqe& sqe);

    // The next completion if the device has written it (its phase matches), else nullopt.
    // Advances the CQ head; cq_head() is then the value for the head doorbell.
    std::optional<jal_admin_cqe> pop();

    uint16_t sq_tail() const { return sq_tail_; }
    uint16_t cq_head() const { return cq_head_; }
    uint16_t expected_phase() const { return phase_; }

private:
    jal_admin_sqe* sq_;
    jal_admin_cqe* cq_;
    uint16_t entries_;
    uint16_t sq_tail_ = 0;
    uint16_t sq_head_ = 0;  // as last reported by the device in a completion
    uint16_t cq_head_ = 0;
    uint16_t phase_ = 1;  // the device writes phase 1 on its first pass over a zeroed CQ
    unsigned in_flight_ = 0;
};

}  // namespace jal::admin
