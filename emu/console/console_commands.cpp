#include "emu/console/console_commands.hpp"

#include "emu/chip/chip.hpp"
#include "emu/console/console_inject.hpp"
#include "emu/console/fabric_commands.hpp"
#include "emu/console/register_names.hpp"
#include "jal/hw/chip.h"
#include "jal/hw/events.h"
#include "jal/hw/mgmt.h"
#include "jal/hw/regs.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <stdexcept>
#include <vector>

namespace jal::emu {

namespace {

using nlohmann::json;

const std::string kHelp = std::string("status | slices | power | phy CHANNEL | peek ADDR LEN | "
                                      "poke ADDR HEXBYTES | reg NAME [VALUE] | dispatch | regs | "
                                      "inject FAULT [ARGS] | ") +
                          kFabricHelp + " | help";

std::uint64_t parse_u64(const std::string& s, const char* what)
{
    try {
        std::size_t used = 0;
        const auto v = std::stoull(s, &used, 0);
        if (used != s.size()) throw std::invalid_argument(s);
        return v;
    } catch (const std::exception&) {
        throw std::invalid_argument(std::string("'") + s + "' is not a " + what);
    }
}

// Masks as hex strings and as lists of set bits: a 64-bit number does not survive every
// JSON reader, and a list is what a person wants to read.
json mask_json(std::uint64_t mask)
{
    json bits = json::array();
    for (std::uint32_t i = 0; i < 64; ++i)
        if ((mask >> i) & 1) bits.push_back(i);
    return {{"hex", fmt::format("{:#018x}", mask)}, {"bits", bits}, {"count", bits.size()}};
}

json status(Chip& chip)
{
    const std::uint32_t st = chip.host().status();
    const std::uint32_t post =
        static_cast<std::uint32_t>(chip.host().host_read(0, 0, JAL_REG_POST_CODE, 4));
    const std::uint32_t fault =
        static_cast<std::uint32_t>(chip.host().host_read(0, 0, JAL_REG_FAULT, 4));
    return {{"chip", chip.index()},
            {"status", status_bits_json(st)},
            {"status_bits", fmt::format("{:#x}", st)},
            {"post_code", fmt::format("{:#06x}", post)},
            {"post_step", jal_post_step_name(post)},
            {"fault", st & JAL_REG_STATUS_FAILED ? json(jal_status_name(fault)) : json()},
            {"modelled_us", chip.clock().now_us()},
            {"boot_count", chip.boot_count()},
            {"reset_cause", jal_reset_cause_name(chip.reset_cause())},
            {"reset_cause_code", chip.reset_cause()}};
}

// reg NAME [VALUE]: a BAR0 register as host function 0 sees it, read or written.
json reg_command(Chip& chip, const std::vector<std::string>& w)
{
    if (w.size() != 2 && w.size() != 3)
        throw std::invalid_argument("reg takes a register name (or offset) and an optional value");
    const auto offset = bar0_register(w[1]);
    if (!offset)
        throw std::invalid_argument("no BAR0 register '" + w[1] +
                                    "'; names: " + bar0_register_names());
    if (w.size() == 3) {
        const auto value = parse_u64(w[2], "32-bit value");
        if (value > 0xffffffffull) throw std::invalid_argument("'" + w[2] + "' is over 32 bits");
        if (chip.host().host_write(0, 0, *offset, 4, value) != JAL_STATUS_OK)
            throw std::invalid_argument("the write was refused");
    }
    const auto value = static_cast<std::uint32_t>(chip.host().host_read(0, 0, *offset, 4));
    json j = bar0_register_json(*offset, value);
    j["written"] = w.size() == 3;
    return j;
}

json eye_json(const Eye& e)
{
    if (e.empty()) return nullptr;
    return json::array({e.lo, e.hi});
}

json phy(Chip& chip, std::uint32_t ch)
{
    const HbmPhy& p = chip.phy();
    const std::uint32_t vref = p.vref(ch);
    json lanes = json::array();
    for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) {
        lanes.push_back({{"lane", l},
                         {"dead", p.lane_dead(ch, l)},
                         {"read_delay", p.read_delay(ch, l)},
                         {"write_delay", p.write_delay(ch, l)},
                         {"read_eye", eye_json(p.read_eye(ch, l, vref))},
                         {"write_eye", eye_json(p.write_eye(ch, l, vref))}});
    }
    json carriers = json::array();
    for (std::uint32_t dq = 0; dq < JAL_HBM_DQ_LANES; ++dq) carriers.push_back(p.carrier(ch, dq));
    return {{"channel", ch},
            {"enabled", p.channel_enabled(ch)},
            {"vref", vref},
            {"vref_opt", p.vref_opt(ch)},
            {"wrlvl_point", p.wrlvl_point(ch)},
            {"carriers", carriers},
            {"lanes", lanes}};
}

// The last kernel dispatch: its report and every slice's final state.
json last_dispatch(Chip& chip)
{
    const DispatchUnit& d = chip.cp().dispatcher();
    const jal_dispatch_report r = d.last_report();
    json slices = json::array();
    static const char* states[] = {"runnable", "blocked", "ended", "faulted", "stopped"};
    for (const exec::SliceSnapshot& s : d.last_slices())
        slices.push_back({{"logical", s.logical},
                          {"physical", s.physical},
                          {"pc", s.pc},
                          {"state", s.state < 5 ? states[s.state] : "?"},
                          {"executed", s.executed},
                          {"end_ns", s.end_ns},
                          {"x", s.x},
                          {"q", s.q}});
    return {{"status", jal_status_name(r.status)},
            {"status_code", r.status},
            {"fault_slice", r.fault_slice == ~0u ? json() : json(r.fault_slice)},
            {"fault_pc", r.fault_pc},
            {"fault_opcode", fmt::format("{:#04x}", r.fault_opcode)},
            {"fault_address", fmt::format("{:#x}", r.fault_address)},
            {"modelled_ns", r.modelled_ns},
            {"instructions", r.instructions},
            {"flops", r.flops},
            {"hbm_bytes", r.hbm_bytes},
            {"energy_nj", r.energy_nj},
            {"slices", slices}};
}

// The management core's registers, as hex strings by name (the image only: the native
// firmware's registers are the host's, for host gdb).
json core_registers(Chip& chip)
{
    const auto regs = chip.core_registers();
    if (!regs) throw std::invalid_argument("regs needs the firmware image (jal-emu --fw image)");
    json names = json::object();
    for (unsigned i = 0; i < gdb::kNumRegisters; ++i)
        names[gdb::kRegisterNames[i]] = fmt::format("{:#010x}", (*regs)[i]);
    return {{"registers", names}, {"held_by_debugger", chip.debug() && chip.debug()->halted()}};
}

json run(Chip& chip, const std::vector<std::string>& w)
{
    const std::string& cmd = w[0];
    auto need = [&](std::size_t n) {
        if (w.size() != n + 1)
            throw std::invalid_argument(cmd + " takes " + std::to_string(n) + " argument(s)");
    };
    if (cmd == "help") return {{"commands", kHelp}};
    if (auto j = run_fabric_command(chip, w)) return *j;
    if (cmd == "status") {
        need(0);
        return status(chip);
    }
    if (cmd == "reg") return reg_command(chip, w);
    if (cmd == "inject") return inject_command(chip, w);
    if (cmd == "slices") {
        need(0);
        return {{"enabled", mask_json(chip.slices().enabled())},
                {"gated", mask_json(chip.slices().gated())},
                {"out_of_reset", mask_json(chip.slices().out_of_reset())},
                {"powered", chip.slices().powered_count()}};
    }
    if (cmd == "power") {
        need(0);
        const PowerModel& p = chip.power();
        return {{"power_w", p.power_w()},       {"junction_c", p.junction_c()},
                {"hbm_c", p.hbm_c()},           {"clock_mhz", p.clock_mhz()},
                {"voltage_mv", p.voltage_mv()}, {"timing_violations", p.timing_violations()}};
    }
    if (cmd == "regs") {
        need(0);
        return core_registers(chip);
    }
    if (cmd == "dispatch") {
        need(0);
        return last_dispatch(chip);
    }
    if (cmd == "phy") {
        need(1);
        const auto ch = parse_u64(w[1], "channel number");
        if (ch >= JAL_HBM_CHANNELS)
            throw std::invalid_argument("channel " + w[1] + " does not exist (0-191)");
        return phy(chip, static_cast<std::uint32_t>(ch));
    }
    if (cmd == "peek") {
        need(2);
        const auto addr = parse_u64(w[1], "device address"), len = parse_u64(w[2], "length");
        if (len > 4096) throw std::invalid_argument("peek reads at most 4096 bytes");
        const auto bytes = chip.hbm().range(addr, len);
        if (bytes.size() != len) throw std::invalid_argument("range is outside device memory");
        static const char* hex = "0123456789abcdef";
        std::string out;
        for (std::byte b : bytes) {
            out.push_back(hex[std::to_integer<int>(b) >> 4]);
            out.push_back(hex[std::to_integer<int>(b) & 15]);
        }
        return {{"address", addr}, {"hex", out}};
    }
    if (cmd == "poke") {
        need(2);
        const auto addr = parse_u64(w[1], "device address");
        const std::string& hex = w[2];
        if (hex.size() % 2 || hex.size() > 8192)
            throw std::invalid_argument(
                "poke takes an even number of hex digits (at most 4096 bytes)");
        auto bytes = chip.hbm().range(addr, hex.size() / 2);
        if (bytes.size() != hex.size() / 2)
            throw std::invalid_argument("range is outside device memory");
        std::vector<std::byte> data(hex.size() / 2);
        for (std::size_t i = 0; i < data.size(); ++i)
            data[i] =
                static_cast<std::byte>(parse_u64("0x" + hex.substr(2 * i, 2), "hex byte string"));
        std::copy(data.begin(), data.end(), bytes.begin());
        return {{"address", addr}, {"written", data.size()}};
    }
    throw std::invalid_argument("unknown command '" + cmd + "'; commands: " + kHelp);
}

}  // namespace

std::string run_console_command(Chip& chip, const std::string& line)
{
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    json out;
    try {
        if (words.empty()) throw std::invalid_argument("empty command; commands: " + kHelp);
        out = run(chip, words);
        out["ok"] = true;
    } catch (const std::exception& e) {
        out = {{"ok", false}, {"error", e.what()}};
    }
    return out.dump();
}

}  // namespace jal::emu
