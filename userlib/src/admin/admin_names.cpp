#include "admin_names.hpp"

#include <cstdio>

#include <jal/hw/admin.h>

namespace jal::admin {

std::string opcode_name(uint8_t opcode)
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
    case JAL_ADMIN_GET_LINK_REPORT:
        return "GET_LINK_REPORT";
    case JAL_ADMIN_RESET:
        return "RESET";
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
    case JAL_ADMIN_EXPORT_MEMORY:
        return "EXPORT_MEMORY";
    case JAL_ADMIN_IMPORT_PEER:
        return "IMPORT_PEER";
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
    case JAL_ADMIN_FW_DOWNLOAD:
        return "FW_DOWNLOAD";
    case JAL_ADMIN_FW_ACTIVATE:
        return "FW_ACTIVATE";
    case JAL_ADMIN_FW_STATUS:
        return "FW_STATUS";
    case JAL_ADMIN_DEBUG_FAULT:
        return "DEBUG_FAULT";
    }
    char buf[16];
    std::snprintf(buf, sizeof buf, "opcode 0x%02x", opcode);
    return buf;
}

}  // namespace jal::admin
