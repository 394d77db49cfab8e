#include "emu/trace/admin_trace.hpp"

#include "jal/hw/status.h"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

namespace jal::emu {

void AdminTrace::fetched(std::uint32_t fn, const jal_admin_sqe& sqe)
{
    if (fn >= pending_.size()) return;
    std::lock_guard lock(m_);
    Pending& p = pending_[fn];
    // A command the firmware fetched but never completed (its queue went into error, or the
    // function detached) is what a bring-up engineer looks for: kept, ending here.
    if (p.valid) emit(fn, p, {{"status", "no completion"}});
    p = Pending{true, sqe.opcode, sqe.cid, sqe.data_len, trace_.writer->wall_us()};
}

void AdminTrace::completed(std::uint32_t fn, const jal_admin_cqe& cqe)
{
    if (fn >= pending_.size()) return;
    std::lock_guard lock(m_);
    Pending& p = pending_[fn];
    if (!p.valid || p.cid != cqe.cid) return;  // not the command we saw fetched
    emit(fn, p, {{"status", jal_status_name(cqe.status)}, {"result", cqe.result}});
    p.valid = false;
}

void AdminTrace::emit(std::uint32_t fn, const Pending& p, nlohmann::json outcome)
{
    TraceWriter& w = *trace_.writer;
    outcome["function"] = fn;
    outcome["cid"] = p.cid;
    outcome["data_len"] = p.data_len;
    w.complete(wall_pid(trace_.chip), kAdminTid, opcode_name(p.opcode), "admin", p.t0,
               std::max(0.0, w.wall_us() - p.t0), std::move(outcome));
}

std::string AdminTrace::opcode_name(std::uint8_t opcode)
{
    if (const char* name = jal_admin_opcode_name(opcode)) return name;
    return fmt::format("opcode {:#04x}", opcode);
}

}  // namespace jal::emu
