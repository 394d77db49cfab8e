// The console's `inject` command: queues a fault for the firmware to inject
// (emu/chip/fault_injector.hpp), as `jalctl debug inject` asks it through the admin queue.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace jal::emu {

class Chip;

// words: "inject", the fault's name, its arguments. Throws std::invalid_argument with the
// usage on bad input.
nlohmann::json inject_command(Chip& chip, const std::vector<std::string>& words);

extern const char* const kInjectHelp;

}  // namespace jal::emu
