// The chip's fabric ports through the JAL_LINK_* registers, trained lane by lane like the
// HBM PHY: each cabled port's lanes are trained against the far end, their margins read,
// a port with a lane short of margin retrained once, and the port brought up at full width,
// at a degraded width (4, 2 or 1 lanes) or left down with a reason. A cabled port that is
// down (its peer not there yet, lost, or taken down) is retrained once a second, so links
// come up when their far end does. Each change of a port's outcome is an event. Only
// register results are trusted. docs/fabric.md, "Link training".
#pragma once

#include <array>
#include <cstdint>

#include "firmware/host/journal.hpp"
#include "jal/hw/mgmt.h"

namespace jal::fw::links {

// What the firmware knows of one port beyond its registers.
struct PortTraining {
    std::uint8_t lanes = 0;     // in use; 0 while down
    std::uint8_t lanes_ok = 0;  // locked with margin at the last training
    std::uint8_t reason = 1;    // enum jal_link_down_reason (NOT_TRAINED)
    bool logged = false;        // an outcome was logged since boot
    std::uint32_t trainings = 0, retrains = 0;
};

class LinkManager {
public:
    explicit LinkManager(host::Journal& journal) : journal_(journal) {}

    // The boot step: trains every cabled port; logs each port's outcome and how many came
    // up. Never fails the boot: a link whose far end is not there yet comes up later.
    std::uint32_t train_all();
    // Every 1 ms tick: retrains cabled ports that are down, once every kRetrainTicks.
    void tick();
    // Trains one cabled port now (a lane of it died); false for a port not cabled.
    bool retrain(std::uint32_t port);

    std::uint32_t connected() const { return connected_; }  // masks of register ports
    std::uint32_t up() const { return up_; }
    const PortTraining& port(std::uint32_t p) const { return ports_[p]; }
    std::uint32_t degraded_count() const;
    std::uint32_t retrains_total() const;

    static constexpr std::uint32_t kRetrainTicks = 1000;

private:
    void train_port(std::uint32_t port);
    // Logs the port's outcome if it changed from (old_lanes, old_reason) or is the first.
    void log_outcome(std::uint32_t port, std::uint8_t old_lanes, std::uint8_t old_reason);

    host::Journal& journal_;
    std::uint32_t connected_ = 0, up_ = 0, ticks_ = 0;
    std::array<PortTraining, JAL_LINK_PORTS> ports_{};
};

}  // namespace jal::fw::links
