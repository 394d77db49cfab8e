#include "firmware/host/admin_links.hpp"

#include "firmware/hal/hal.hpp"
#include "firmware/util/mask64.hpp"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

namespace jal::fw::host {

namespace {

std::uint64_t read64(std::uint32_t lo_reg, std::uint32_t hi_reg)
{
    const std::uint32_t lo = hal::read32(lo_reg);  // latches HI
    return std::uint64_t{hal::read32(hi_reg)} << 32 | lo;
}

std::uint8_t state_of(std::uint32_t status, std::uint32_t lanes)
{
    if (!(status & JAL_LINK_ST_CONNECTED)) return JAL_LINK_PORT_NOT_CABLED;
    if (!(status & JAL_LINK_ST_UP)) return JAL_LINK_PORT_DOWN;
    return lanes < JAL_LINK_LANES ? JAL_LINK_PORT_DEGRADED : JAL_LINK_PORT_UP;
}

// One port, from its registers and what training found.
void build_port(const links::LinkManager& links, std::uint32_t port, jal_link_port_report& r)
{
    r = jal_link_port_report{};
    r.port = static_cast<std::uint8_t>(port);
    r.kind = port < JAL_LINK_SCALE_UP_PORTS ? JAL_LINK_KIND_SCALE_UP : JAL_LINK_KIND_SCALE_OUT;
    hal::write32(JAL_LINK_SEL, port);
    const std::uint32_t status = hal::read32(JAL_LINK_STATUS);
    const std::uint32_t lanes = status & JAL_LINK_ST_UP ? (status >> 8) & 0xff : 0;
    r.state = state_of(status, lanes);
    if (r.state == JAL_LINK_PORT_NOT_CABLED) return;
    const links::PortTraining& t = links.port(port);
    r.lanes = static_cast<std::uint8_t>(lanes);
    // The registers are the truth about up or down: a port lost since its training is down
    // whatever the firmware last saw.
    r.reason = lanes     ? t.reason
               : t.lanes ? static_cast<std::uint8_t>(JAL_LINK_DOWN_LOST)
                         : t.reason;
    r.lanes_ok_mask = t.lanes_ok;
    const std::uint32_t peer = hal::read32(JAL_LINK_PEER);
    if (status & JAL_LINK_ST_SWITCHED) {
        r.flags = JAL_LINK_PORT_SWITCHED;
        r.peer_chip = JAL_LINK_PEER_ANY;
        r.peer_port = static_cast<std::uint16_t>((peer >> 16) & 0xff);  // the plane
    } else {
        r.peer_chip = static_cast<std::uint16_t>(peer & 0xffff);
        r.peer_port = static_cast<std::uint16_t>((peer >> 16) & 0xff);
    }
    r.mbytes_per_s = lanes * JAL_LINK_LANE_MBYTES_PER_S;
    for (std::uint32_t lane = 0; lane < JAL_LINK_LANES; ++lane) {
        hal::write32(JAL_LINK_LANE_SEL, lane);
        r.margin_mui[lane] = static_cast<std::uint16_t>(hal::read32(JAL_LINK_LANE_MARGIN));
    }
    r.trainings = t.trainings;
    r.retrains = t.retrains;
    r.errors = hal::read32(JAL_LINK_ERRORS);
    r.tx_bytes = read64(JAL_LINK_TX_BYTES_LO, JAL_LINK_TX_BYTES_HI);
    r.rx_bytes = read64(JAL_LINK_RX_BYTES_LO, JAL_LINK_RX_BYTES_HI);
    r.transfers = read64(JAL_LINK_TRANSFERS_LO, JAL_LINK_TRANSFERS_HI);
}

}  // namespace

std::uint32_t write_link_report(const links::LinkManager& links, const jal_admin_sqe& sqe,
                                ReplyWriter& out)
{
    const std::uint32_t first = sqe.cdw[0];
    std::uint32_t count = sqe.cdw[1];
    for (std::uint32_t i = 2; i < 10; ++i)
        if (sqe.cdw[i] != 0) return JAL_STATUS_INVALID_FIELD;
    if (first >= JAL_LINK_PORTS || count == 0) return JAL_STATUS_INVALID_FIELD;
    if (count > JAL_LINK_PORTS - first) count = JAL_LINK_PORTS - first;
    const std::uint32_t fits =
        (sqe.data_len - static_cast<std::uint32_t>(sizeof(jal_link_report_header))) /
        sizeof(jal_link_port_report);
    if (count > fits) count = fits;

    jal_link_report_header hdr{};
    hdr.first_port = first;
    hdr.count = count;
    hdr.self_chip = hal::read32(JAL_LINK_SELF);
    const std::uint32_t connected = hal::read32(JAL_LINK_CONNECTED_MASK);
    const std::uint32_t up = hal::read32(JAL_LINK_UP_MASK) & connected;
    hdr.ports_cabled = util::popcount64(connected);
    hdr.ports_up = util::popcount64(up);
    for (std::uint32_t port = 0; port < JAL_LINK_PORTS; ++port) {
        if (!((up >> port) & 1)) continue;
        hal::write32(JAL_LINK_SEL, port);
        hdr.ports_degraded += ((hal::read32(JAL_LINK_STATUS) >> 8) & 0xff) < JAL_LINK_LANES;
    }
    out.put(&hdr, sizeof hdr);
    jal_link_port_report rep;
    for (std::uint32_t i = 0; i < count; ++i) {
        build_port(links, first + i, rep);
        if (!out.put(&rep, sizeof rep)) break;
    }
    return JAL_STATUS_OK;
}

}  // namespace jal::fw::host
