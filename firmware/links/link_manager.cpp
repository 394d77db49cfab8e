#include "firmware/links/link_manager.hpp"

#include "firmware/hal/hal.hpp"
#include "firmware/host/event_codes.hpp"
#include "firmware/util/mask64.hpp"
#include "jal/hw/admin.h"

namespace jal::fw::links {

namespace {

struct LaneResult {
    bool peer = false;     // the far end answered
    std::uint32_t ok = 0;  // lanes locked with margin
};

constexpr std::uint32_t kAllLanes = (1u << JAL_LINK_LANES) - 1;

// Trains the selected port's lanes once and keeps those with margin.
LaneResult train_lanes_once()
{
    hal::write32(JAL_LINK_CMD, JAL_LINK_CMD_TRAIN_LANES);
    LaneResult r;
    r.peer = (hal::read32(JAL_LINK_STATUS) & JAL_LINK_ST_PEER) != 0;
    if (!r.peer) return r;
    const std::uint32_t locked = hal::read32(JAL_LINK_LANES_OK) & kAllLanes;
    for (std::uint32_t lane = 0; lane < JAL_LINK_LANES; ++lane) {
        if (!((locked >> lane) & 1)) continue;
        hal::write32(JAL_LINK_LANE_SEL, lane);
        if (hal::read32(JAL_LINK_LANE_MARGIN) >= JAL_LINK_MARGIN_MIN_MUI) r.ok |= 1u << lane;
    }
    return r;
}

// The widths a port runs at are 4, 2 or 1 lanes: the lowest of the good lanes that make one.
std::uint32_t lanes_to_use(std::uint32_t good)
{
    const std::uint32_t n = util::popcount64(good);
    const std::uint32_t width = n == 4 ? 4 : n >= 2 ? 2 : n;
    std::uint32_t use = 0;
    for (std::uint32_t lane = 0; lane < JAL_LINK_LANES && util::popcount64(use) < width; ++lane)
        if ((good >> lane) & 1) use |= 1u << lane;
    return use;
}

// The smallest margin of the lanes in `lanes` of the selected port, milli-UI.
std::uint32_t min_margin(std::uint32_t lanes)
{
    std::uint32_t m = 0xffffffffu;
    for (std::uint32_t lane = 0; lane < JAL_LINK_LANES; ++lane) {
        if (!((lanes >> lane) & 1)) continue;
        hal::write32(JAL_LINK_LANE_SEL, lane);
        const std::uint32_t v = hal::read32(JAL_LINK_LANE_MARGIN);
        if (v < m) m = v;
    }
    return lanes ? m : 0;
}

}  // namespace

void LinkManager::train_port(std::uint32_t port)
{
    PortTraining& p = ports_[port];
    const std::uint8_t old_lanes = p.lanes, old_reason = p.reason;
    hal::write32(JAL_LINK_SEL, port);
    ++p.trainings;
    LaneResult r = train_lanes_once();
    // A lane short of margin (or not locked) gets one more chance: a retrain lands on a
    // fresh eye, and a marginal lane usually locks well the second time.
    if (r.peer && r.ok != kAllLanes) {
        ++p.trainings;
        ++p.retrains;
        r = train_lanes_once();
    }
    const std::uint32_t use = lanes_to_use(r.ok);
    p.lanes = 0;
    if (use) {
        hal::write32(JAL_LINK_LANE_USE, use);
        hal::write32(JAL_LINK_CMD, JAL_LINK_CMD_ENABLE);
        const std::uint32_t st = hal::read32(JAL_LINK_STATUS);
        if (st & JAL_LINK_ST_UP) p.lanes = static_cast<std::uint8_t>((st >> 8) & 0xff);
    }
    p.lanes_ok = static_cast<std::uint8_t>(r.ok);
    p.reason = !r.peer                    ? JAL_LINK_DOWN_NO_PEER
               : p.lanes == 0             ? JAL_LINK_DOWN_NO_LANES
               : p.lanes < JAL_LINK_LANES ? JAL_LINK_DOWN_BAD_LANES
                                          : JAL_LINK_DOWN_NONE;
    log_outcome(port, old_lanes, old_reason);
}

void LinkManager::log_outcome(std::uint32_t port, std::uint8_t old_lanes, std::uint8_t old_reason)
{
    PortTraining& p = ports_[port];
    if (p.logged && p.lanes == old_lanes && p.reason == old_reason) return;
    p.logged = true;
    if (p.lanes == JAL_LINK_LANES) {
        hal::write32(JAL_LINK_SEL, port);
        journal_.event(JAL_SRC_LINK, JAL_SEV_INFO, host::kEvLinkUp, "link up",
                       {port, p.lanes, min_margin(lanes_to_use(p.lanes_ok)), p.retrains});
    } else if (p.lanes) {
        journal_.event(JAL_SRC_LINK, JAL_SEV_WARN, host::kEvLinkDegraded, "link degraded",
                       {port, p.lanes, p.lanes_ok, p.reason});
    } else {
        journal_.event(JAL_SRC_LINK, JAL_SEV_WARN, host::kEvLinkDown, "link down",
                       {port, p.reason, p.lanes_ok, p.retrains});
    }
}

std::uint32_t LinkManager::train_all()
{
    connected_ = hal::read32(JAL_LINK_CONNECTED_MASK);
    for (std::uint32_t port = 0; port < JAL_LINK_PORTS; ++port) {
        ports_[port] = PortTraining{};
        if ((connected_ >> port) & 1) train_port(port);
    }
    up_ = hal::read32(JAL_LINK_UP_MASK);
    const std::uint32_t down = connected_ & ~up_;
    journal_.event(JAL_SRC_BOOT, down ? JAL_SEV_WARN : JAL_SEV_INFO, host::kEvLinksTrained,
                   "links trained", {util::popcount64(connected_), util::popcount64(up_), down});
    return JAL_STATUS_OK;
}

bool LinkManager::retrain(std::uint32_t port)
{
    if (port >= JAL_LINK_PORTS || !((connected_ >> port) & 1)) return false;
    ++ports_[port].retrains;
    train_port(port);
    up_ = hal::read32(JAL_LINK_UP_MASK);
    return true;
}

void LinkManager::tick()
{
    if (!connected_ || ++ticks_ < kRetrainTicks) return;
    ticks_ = 0;
    up_ = hal::read32(JAL_LINK_UP_MASK);
    const std::uint32_t down = connected_ & ~up_;
    if (!down) return;
    for (std::uint32_t port = 0; port < JAL_LINK_PORTS; ++port) {
        if (!((down >> port) & 1)) continue;
        PortTraining& p = ports_[port];
        // Up as far as the firmware knew: it went down in service (its peer was lost, a
        // transfer failed, the console took it down).
        if (p.lanes) {
            const std::uint8_t old_lanes = p.lanes, old_reason = p.reason;
            p.lanes = 0;
            p.reason = JAL_LINK_DOWN_LOST;
            log_outcome(port, old_lanes, old_reason);
        }
        // Waiting for a far end that never answered is not a retrain; anything else is.
        if (p.reason != JAL_LINK_DOWN_NO_PEER) ++p.retrains;
        train_port(port);
    }
    up_ = hal::read32(JAL_LINK_UP_MASK);
}

std::uint32_t LinkManager::degraded_count() const
{
    std::uint32_t n = 0;
    for (const PortTraining& p : ports_) n += p.lanes != 0 && p.lanes < JAL_LINK_LANES;
    return n;
}

std::uint32_t LinkManager::retrains_total() const
{
    std::uint32_t n = 0;
    for (const PortTraining& p : ports_) n += p.retrains;
    return n;
}

}  // namespace jal::fw::links
