// GET_LINK_REPORT: the fabric ports as their registers (wiring, state, counters, margins)
// and the link manager (training outcome, retrains) show them. docs/fabric.md.
#pragma once

#include <cstdint>

#include "firmware/host/reply_writer.hpp"
#include "firmware/links/link_manager.hpp"
#include "jal/hw/admin.h"

namespace jal::fw::host {

// Writes the header and the ports [cdw[0], cdw[0] + cdw[1]) that fit; returns a jal_status
// (INVALID_FIELD for a first port past the last, a zero count or nonzero cdw[2..9]).
std::uint32_t write_link_report(const links::LinkManager& links, const jal_admin_sqe& sqe,
                                ReplyWriter& out);

}  // namespace jal::fw::host
