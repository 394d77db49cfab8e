#include "emu/console/register_names.hpp"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>

#include "jal/hw/events.h"
#include "jal/hw/regs.h"
#include "jal/hw/status.h"

namespace jal::emu {

namespace {

struct Named {
    const char* name;
    std::uint32_t offset;
};

constexpr std::array<Named, 26> kRegisters = {{
    {"ID", JAL_REG_ID},
    {"VERSION", JAL_REG_VERSION},
    {"CAP", JAL_REG_CAP},
    {"CHIP_INDEX", JAL_REG_CHIP_INDEX},
    {"FW_VERSION", JAL_REG_FW_VERSION},
    {"STATUS", JAL_REG_STATUS},
    {"BOOT_STATUS", JAL_REG_BOOT_STATUS},
    {"POST_CODE", JAL_REG_POST_CODE},
    {"FAULT", JAL_REG_FAULT},
    {"RESET", JAL_REG_RESET},
    {"RESET_GENERATION", JAL_REG_RESET_GENERATION},
    {"ADMIN_SQ_BASE_LO", JAL_REG_ADMIN_SQ_BASE_LO},
    {"ADMIN_SQ_BASE_HI", JAL_REG_ADMIN_SQ_BASE_HI},
    {"ADMIN_CQ_BASE_LO", JAL_REG_ADMIN_CQ_BASE_LO},
    {"ADMIN_CQ_BASE_HI", JAL_REG_ADMIN_CQ_BASE_HI},
    {"ADMIN_QSIZE", JAL_REG_ADMIN_QSIZE},
    {"ADMIN_CTRL", JAL_REG_ADMIN_CTRL},
    {"ADMIN_STATUS", JAL_REG_ADMIN_STATUS},
    {"ADMIN_PROGRESS", JAL_REG_ADMIN_PROGRESS},
    {"ADMIN_SQ_TAIL", JAL_REG_ADMIN_SQ_TAIL},
    {"ADMIN_CQ_HEAD", JAL_REG_ADMIN_CQ_HEAD},
    {"INTR_MASK", JAL_REG_INTR_MASK},
    {"SCRATCH0", JAL_REG_SCRATCH0},
    {"SCRATCH1", JAL_REG_SCRATCH0 + 4},
    {"SCRATCH2", JAL_REG_SCRATCH0 + 8},
    {"SCRATCH3", JAL_REG_SCRATCH0 + 12},
}};

std::string upper(std::string s)
{
    std::transform(s.begin(), s.end(), s.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return s;
}

}  // namespace

std::optional<std::uint32_t> bar0_register(const std::string& name_or_offset)
{
    const std::string want = upper(name_or_offset);
    for (const Named& r : kRegisters)
        if (want == r.name) return r.offset;
    try {
        std::size_t used = 0;
        const unsigned long v = std::stoul(name_or_offset, &used, 0);
        if (used == name_or_offset.size() && v < 0x1000 && v % 4 == 0)
            return static_cast<std::uint32_t>(v);
    } catch (const std::exception&) {}
    return std::nullopt;
}

std::string bar0_register_name(std::uint32_t offset)
{
    for (const Named& r : kRegisters)
        if (r.offset == offset) return r.name;
    return {};
}

std::string bar0_register_names()
{
    std::string out;
    for (const Named& r : kRegisters) out += (out.empty() ? "" : " ") + std::string(r.name);
    return out;
}

nlohmann::json status_bits_json(std::uint32_t status)
{
    static constexpr std::array<std::pair<std::uint32_t, const char*>, 5> kBits = {{
        {JAL_REG_STATUS_BOOTING, "booting"},
        {JAL_REG_STATUS_READY, "ready"},
        {JAL_REG_STATUS_FAILED, "failed"},
        {JAL_REG_STATUS_DEGRADED, "degraded"},
        {JAL_REG_STATUS_RESETTING, "resetting"},
    }};
    nlohmann::json bits = nlohmann::json::array();
    for (const auto& [bit, name] : kBits)
        if (status & bit) bits.push_back(name);
    return bits;
}

nlohmann::json bar0_register_json(std::uint32_t offset, std::uint32_t value)
{
    const std::string name = bar0_register_name(offset);
    nlohmann::json j = {{"register", name.empty() ? nlohmann::json() : nlohmann::json(name)},
                        {"offset", fmt::format("{:#06x}", offset)},
                        {"value", fmt::format("{:#010x}", value)}};
    switch (offset) {
    case JAL_REG_STATUS:
        j["decoded"] = status_bits_json(value);
        break;
    case JAL_REG_POST_CODE:
        j["decoded"] = jal_post_step_name(value);
        break;
    case JAL_REG_FAULT:
        j["decoded"] = jal_status_name(value);
        break;
    case JAL_REG_BOOT_STATUS:
        j["decoded"] = {{"step", value >> 16}, {"status", jal_status_name(value & 0xffff)}};
        break;
    case JAL_REG_VERSION:
        j["decoded"] = fmt::format("{}.{}", value >> 16, value & 0xffff);
        break;
    case JAL_REG_FW_VERSION:
        j["decoded"] = fmt::format("{}.{}.{}", value >> 16, (value >> 8) & 0xff, value & 0xff);
        break;
    default:
        break;
    }
    return j;
}

}  // namespace jal::emu
