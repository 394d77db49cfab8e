#pragma once

#include <cstdint>
#include <string>

namespace jal::admin {

// "IDENTIFY", "GET_LOG", ... or "opcode 0x42" for opcodes the headers do not define.
std::string opcode_name(uint8_t opcode);

}  // namespace jal::admin
