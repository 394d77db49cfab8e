// BAR0 registers by name for the bring-up console's `reg` command, and how a value of
// each reads (STATUS bits by name, POST codes with their step, statuses by name).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace jal::emu {

// The offset of a register given by name ("STATUS", "post_code") or by offset ("0x20").
// nullopt for neither.
std::optional<std::uint32_t> bar0_register(const std::string& name_or_offset);
// The register's name, or "" for an offset without one.
std::string bar0_register_name(std::uint32_t offset);
// Every name, for help and errors.
std::string bar0_register_names();
// {"register", "offset", "value" (hex), and "decoded" where the register has a meaning}.
nlohmann::json bar0_register_json(std::uint32_t offset, std::uint32_t value);
// STATUS bits as names: ["ready", "degraded"].
nlohmann::json status_bits_json(std::uint32_t status);

}  // namespace jal::emu
