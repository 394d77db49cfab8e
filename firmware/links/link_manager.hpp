// The chip's fabric ports through the JAL_LINK_* registers: every cabled port trained at
// boot, and a cabled port that is down (its peer not there yet, lost, or taken down)
// retrained once a second, so links come up when their far end does. Only register
// results are trusted.
#pragma once

#include <cstdint>

#include "firmware/host/journal.hpp"

namespace jal::fw::links {

class LinkManager {
public:
    explicit LinkManager(host::Journal& journal) : journal_(journal) {}

    // The boot step: trains every cabled port; logs how many came up. Never fails the
    // boot: a link whose far end is not there yet comes up later.
    std::uint32_t train_all();
    // Every 1 ms tick: retrains cabled ports that are down, once every kRetrainTicks.
    void tick();

    std::uint32_t connected() const { return connected_; }  // masks of register ports
    std::uint32_t up() const { return up_; }

    static constexpr std::uint32_t kRetrainTicks = 1000;

private:
    std::uint32_t train(std::uint32_t mask);  // returns the mask of ports up afterwards

    host::Journal& journal_;
    std::uint32_t connected_ = 0, up_ = 0, ticks_ = 0;
};

}  // namespace jal::fw::links
