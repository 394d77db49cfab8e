// The JSON form of a code object: header, arguments and instructions, plus the
// validator's verdict, for scripts (jal-objdump --json).
#pragma once

#include <cstdint>
#include <span>

#include <nlohmann/json.hpp>

namespace jal::objdump {

nlohmann::json code_object_json(std::span<const uint8_t> bytes);

}  // namespace jal::objdump
