#include "admin_names.hpp"

#include <cstdio>

#include <jal/hw/admin.h>

namespace jal::admin {

std::string opcode_name(uint8_t opcode)
{
    if (const char* name = jal_admin_opcode_name(opcode)) return name;
    char buf[16];
    std::snprintf(buf, sizeof buf, "opcode 0x%02x", opcode);
    return buf;
}

}  // namespace jal::admin
