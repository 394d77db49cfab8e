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
    switch (opcode) {
    case JAL_ADMIN_IDENTIFY:
        return "IDENTIFY";
    case JAL_ADMIN_GET_FEATURE:
        return "GET_FEATURE";
    case JAL_ADMIN_SET_FEATURE:
        return "SET_FEATURE";
    case JAL_ADMIN_GET_TELEMETRY:
        return "GET_TELEMETRY";
    case JAL_ADMIN_GET_LOG:
        return "GET_LOG";
    case JAL_ADMIN_GET_SLICE_MAP:
        return "GET_SLICE_MAP";
    case JAL_ADMIN_GET_HBM_REPORT:
        return "GET_HBM_REPORT";
    case JAL_ADMIN_RESET:
        return "RESET";
    case JAL_ADMIN_GET_LINK_REPORT:
        return "GET_LINK_REPORT";
    case JAL_ADMIN_CREATE_CONTEXT:
        return "CREATE_CONTEXT";
    case JAL_ADMIN_DESTROY_CONTEXT:
        return "DESTROY_CONTEXT";
    case JAL_ADMIN_ALLOC_MEMORY:
        return "ALLOC_MEMORY";
    case JAL_ADMIN_FREE_MEMORY:
        return "FREE_MEMORY";
    case JAL_ADMIN_GET_PLACEMENT:
        return "GET_PLACEMENT";
    case JAL_ADMIN_CREATE_QUEUE:
        return "CREATE_QUEUE";
    case JAL_ADMIN_DESTROY_QUEUE:
        return "DESTROY_QUEUE";
    case JAL_ADMIN_QUEUE_STATUS:
        return "QUEUE_STATUS";
    case JAL_ADMIN_RESET_QUEUE:
        return "RESET_QUEUE";
    case JAL_ADMIN_GET_USAGE:
        return "GET_USAGE";
    case JAL_ADMIN_EXPORT_MEMORY:
        return "EXPORT_MEMORY";
    case JAL_ADMIN_IMPORT_PEER:
        return "IMPORT_PEER";
    case JAL_ADMIN_FW_DOWNLOAD:
        return "FW_DOWNLOAD";
    case JAL_ADMIN_FW_ACTIVATE:
        return "FW_ACTIVATE";
    case JAL_ADMIN_FW_STATUS:
        return "FW_STATUS";
    case JAL_ADMIN_DEBUG_FAULT:
        return "DEBUG_FAULT";
    }
    return fmt::format("opcode {:#04x}", opcode);
}

}  // namespace jal::emu
