// The console's fabric commands: the domain's state, the chip's links, another chip's
// memory read and written through them, a link taken down or up (fault injection).
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace jal::emu {

class Chip;

inline constexpr const char* kFabricHelp =
    "fabric | links | rpeek CHIP ADDR LEN | rpoke CHIP ADDR HEXBYTES | link PORT up|down | "
    "peer-memory | link PORT lane LANE bad";

// The reply to `words` if it is a fabric command, else nullopt. Throws
// std::invalid_argument (bad arguments) or std::runtime_error (the transfer failed).
std::optional<nlohmann::json> run_fabric_command(Chip& chip, const std::vector<std::string>& w);

// The chip's ports as the console and telemetry show them.
nlohmann::json links_json(Chip& chip);

}  // namespace jal::emu
