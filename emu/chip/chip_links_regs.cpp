// ChipLinks as the management core sees it: the JAL_MGMT_LINK register block.
#include "emu/chip/chip_links.hpp"

#include "emu/chip/seeded.hpp"
#include "jal/hw/mgmt.h"

#include <bit>

namespace jal::emu {

namespace {
constexpr std::uint32_t off(std::uint32_t reg)
{
    return reg - JAL_MGMT_REG(JAL_MGMT_LINK, 0);
}
std::uint32_t port_number(const LinkPortConfig& c)
{
    return c.scale_out ? JAL_LINK_SCALE_UP_PORTS + c.port : c.port;
}
std::uint32_t latch(std::uint64_t v, std::uint32_t& hi)
{
    hi = static_cast<std::uint32_t>(v >> 32);
    return static_cast<std::uint32_t>(v);
}
// One in kMarginalOneIn lanes comes out of a port's first training short of margin (the
// CDR locked near an eye edge); a retrain lands it well.
constexpr std::uint64_t kMarginalOneIn = 16;
}  // namespace

std::uint32_t ChipLinks::register_port(unsigned index) const
{
    std::lock_guard lock(mutex_);
    return index < ports_.size() ? port_number(ports_[index].config) : JAL_LINK_PORTS;
}

bool ChipLinks::kill_lane(std::uint32_t port, unsigned lane)
{
    std::lock_guard lock(mutex_);
    LinkPort* p = physical(port);
    if (!p || lane >= kLinkLanes) return false;
    p->bad_lanes = static_cast<std::uint8_t>(p->bad_lanes | 1u << lane);
    ++p->errors;  // the frames in flight on it
    return true;
}

// The PHY trains every lane against the far end: a lane that locks has an eye margin drawn
// from the chip's seed, the port and the attempt. The port is out of service meanwhile.
void ChipLinks::train_lanes(LinkPort& p, bool there)
{
    const unsigned attempt = p.trainings++;
    p.up = false;
    p.peer_answered = there;
    p.lanes_ok = 0;
    p.margin_mui = {};
    p.down_reason = there         ? "trained, not enabled"
                    : p.peer_gone ? "its peer is gone"
                                  : "no answer from its peer";
    if (!there) return;
    const std::uint64_t port = port_number(p.config);
    for (unsigned lane = 0; lane < kLinkLanes; ++lane) {
        if ((p.bad_lanes >> lane) & 1) continue;
        const bool marginal =
            attempt == 0 && seeded(seed_, {0x11c, port, lane}) % kMarginalOneIn == 0;
        p.margin_mui[lane] = static_cast<std::uint16_t>(
            marginal ? seeded_range(seed_, {0x11d, port, lane, attempt}, 60, 140)
                     : seeded_range(seed_, {0x11e, port, lane, attempt}, 200, 450));
        p.lanes_ok = static_cast<std::uint8_t>(p.lanes_ok | 1u << lane);
    }
}

// Up on the lanes of LANE_USE, if they all locked and make a width of 4, 2 or 1.
void ChipLinks::enable(LinkPort& p)
{
    const auto use = static_cast<std::uint8_t>(lane_use_ & ((1u << kLinkLanes) - 1));
    const auto n = static_cast<unsigned>(std::popcount(use));
    const bool ok = p.peer_answered && (use & ~p.lanes_ok) == 0 && (n == 4 || n == 2 || n == 1);
    p.up = ok;
    if (ok) p.lanes = n;
    p.down_reason = ok                ? ""
                    : p.peer_answered ? "enabled on lanes that did not lock"
                                      : p.down_reason;
}

LinkPort* ChipLinks::physical(std::uint32_t port)
{
    for (LinkPort& p : ports_)
        if (port_number(p.config) == port) return &p;
    return nullptr;
}

std::uint32_t ChipLinks::fw_read(std::uint32_t offset)
{
    std::lock_guard lock(mutex_);
    const LinkPort* p = physical(selected_);
    switch (offset) {
    case off(JAL_LINK_SEL):
        return selected_;
    case off(JAL_LINK_STATUS):
        if (!p) return 0;
        return JAL_LINK_ST_CONNECTED | (p->config.switched ? JAL_LINK_ST_SWITCHED : 0u) |
               (p->peer_answered ? JAL_LINK_ST_PEER : 0u) |
               (p->up ? JAL_LINK_ST_UP | p->lanes << 8 : 0u);
    case off(JAL_LINK_PEER):
        if (p && p->config.switched) return JAL_LINK_PEER_SWITCH | p->config.port << 16;
        return p ? p->config.peer_chip | p->config.peer_port << 16 : 0;
    case off(JAL_LINK_TX_BYTES_LO):
        return latch(p ? p->tx_bytes : 0, latch_hi_);
    case off(JAL_LINK_RX_BYTES_LO):
        return latch(p ? p->rx_bytes : 0, latch_hi_);
    case off(JAL_LINK_TRANSFERS_LO):
        return latch(p ? p->transfers : 0, latch_hi_);
    case off(JAL_LINK_TX_BYTES_HI):
    case off(JAL_LINK_RX_BYTES_HI):
    case off(JAL_LINK_TRANSFERS_HI):
        return latch_hi_;
    case off(JAL_LINK_LANE_SEL):
        return lane_sel_;
    case off(JAL_LINK_LANE_MARGIN):
        return p && lane_sel_ < kLinkLanes ? p->margin_mui[lane_sel_] : 0;
    case off(JAL_LINK_LANES_OK):
        return p ? p->lanes_ok : 0;
    case off(JAL_LINK_LANE_USE):
        return lane_use_;
    case off(JAL_LINK_ERRORS):
        return p ? static_cast<std::uint32_t>(p->errors) : 0;
    case off(JAL_LINK_UP_MASK):
    case off(JAL_LINK_CONNECTED_MASK): {
        std::uint32_t mask = 0;
        for (const LinkPort& q : ports_)
            if (offset == off(JAL_LINK_CONNECTED_MASK) || q.up) mask |= 1u << port_number(q.config);
        return mask;
    }
    case off(JAL_LINK_ERRORS_TOTAL): {
        std::uint64_t total = 0;
        for (const LinkPort& q : ports_) total += q.errors;
        return static_cast<std::uint32_t>(total);
    }
    default:
        return 0;
    }
}

void ChipLinks::fw_write(std::uint32_t offset, std::uint32_t value,
                         const std::function<bool(unsigned)>& reachable)
{
    std::lock_guard lock(mutex_);
    if (offset == off(JAL_LINK_SEL)) {
        selected_ = value < JAL_LINK_PORTS ? value : 0;
        return;
    }
    if (offset == off(JAL_LINK_LANE_SEL)) {
        lane_sel_ = value < kLinkLanes ? value : 0;
        return;
    }
    if (offset == off(JAL_LINK_LANE_USE)) {
        lane_use_ = value & ((1u << kLinkLanes) - 1);
        return;
    }
    LinkPort* p = physical(selected_);
    if (offset != off(JAL_LINK_CMD) || !p) return;
    if (value == JAL_LINK_CMD_DOWN) {
        p->up = false;
        p->down_reason = "taken down by the firmware";
    } else if (value == JAL_LINK_CMD_TRAIN || value == JAL_LINK_CMD_TRAIN_LANES) {
        // Training needs the far end: a chip whose process has not joined (or has gone)
        // does not answer, and the port stays down. A switched port's far end is its plane's
        // switch, which is always there.
        train_lanes(*p, p->config.switched || (!p->peer_gone && reachable(p->config.peer_chip)));
        if (value == JAL_LINK_CMD_TRAIN && p->lanes_ok) {
            // 1.7's TRAIN: up on every lane that locked.
            p->up = true;
            p->lanes = static_cast<unsigned>(std::popcount(p->lanes_ok));
            p->down_reason = "";
        }
    } else if (value == JAL_LINK_CMD_ENABLE) {
        enable(*p);
    }
}

void ChipLinks::reset()
{
    std::lock_guard lock(mutex_);
    for (LinkPort& p : ports_) {
        p.up = false;
        p.down_reason = "not trained";
        p.peer_answered = false;
        p.lanes_ok = 0;
        p.margin_mui = {};
        p.trainings = 0;
    }
    selected_ = latch_hi_ = lane_sel_ = lane_use_ = 0;
}

}  // namespace jal::emu
