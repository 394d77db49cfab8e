// ChipLinks as the management core sees it: the JAL_MGMT_LINK register block.
#include "emu/chip/chip_links.hpp"

#include "jal/hw/mgmt.h"

namespace jal::emu {

namespace {
constexpr std::uint32_t off(std::uint32_t reg)
{
    return reg - JAL_MGMT_REG(JAL_MGMT_LINK, 0);
}
std::uint32_t register_port(const LinkPortConfig& c)
{
    return c.scale_out ? JAL_LINK_SCALE_UP_PORTS + c.port : c.port;
}
}  // namespace

LinkPort* ChipLinks::physical(std::uint32_t port)
{
    for (LinkPort& p : ports_)
        if (register_port(p.config) == port) return &p;
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
               (p->up ? JAL_LINK_ST_UP | p->lanes << 8 : 0u);
    case off(JAL_LINK_PEER):
        if (p && p->config.switched) return JAL_LINK_PEER_SWITCH | p->config.port << 16;
        return p ? p->config.peer_chip | p->config.peer_port << 16 : 0;
    case off(JAL_LINK_TX_BYTES_LO):
    case off(JAL_LINK_RX_BYTES_LO): {
        const std::uint64_t v = !p                                    ? 0
                                : offset == off(JAL_LINK_TX_BYTES_LO) ? p->tx_bytes
                                                                      : p->rx_bytes;
        latch_hi_ = static_cast<std::uint32_t>(v >> 32);
        return static_cast<std::uint32_t>(v);
    }
    case off(JAL_LINK_TX_BYTES_HI):
    case off(JAL_LINK_RX_BYTES_HI):
        return latch_hi_;
    case off(JAL_LINK_ERRORS):
        return p ? static_cast<std::uint32_t>(p->errors) : 0;
    case off(JAL_LINK_UP_MASK):
    case off(JAL_LINK_CONNECTED_MASK): {
        std::uint32_t mask = 0;
        for (const LinkPort& q : ports_)
            if (offset == off(JAL_LINK_CONNECTED_MASK) || q.up)
                mask |= 1u << register_port(q.config);
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
    LinkPort* p = physical(selected_);
    if (offset != off(JAL_LINK_CMD) || !p) return;
    if (value == JAL_LINK_CMD_DOWN) {
        p->up = false;
        p->down_reason = "taken down by the firmware";
    } else if (value == JAL_LINK_CMD_TRAIN) {
        // Training needs the far end: a chip whose process has not joined (or has gone)
        // does not answer, and the port stays down. A switched port's far end is its plane's
        // switch, which is always there.
        const bool there = p->config.switched || (!p->peer_gone && reachable(p->config.peer_chip));
        p->up = there;
        p->lanes = kLinkLanes;
        p->down_reason = there ? "" : p->peer_gone ? "its peer is gone" : "no answer from its peer";
    }
}

void ChipLinks::reset()
{
    std::lock_guard lock(mutex_);
    for (LinkPort& p : ports_) {
        p.up = false;
        p.down_reason = "not trained";
    }
    selected_ = latch_hi_ = 0;
}

}  // namespace jal::emu
