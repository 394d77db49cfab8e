// The GDB remote protocol's commands for one halted M-profile core: registers ('g', 'G',
// 'p', 'P'), memory ('m', 'M'), breakpoints ('Z0'/'Z1', 'z0'/'z1'), the stop reason ('?'),
// the target description (qXfer:features:read:target.xml) and the resume commands, which
// are returned to the caller (the server decides how to wait for the next stop).
// Packets that are not understood get the empty reply; bad arguments get "E01".
#pragma once

#include "emu/gdb/debug_target.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace jal::emu::gdb {

enum class Resume {
    none,    // stay halted; send `reply`
    cont,    // 'c': run until a breakpoint, a fault or an interrupt
    step,    // 's': one instruction
    detach,  // 'D': drop breakpoints, run on, close the connection
    kill,    // 'k': as detach (the chip is not ours to end), without a reply
};

struct CommandResult {
    std::string reply;  // sent when resume is none or detach
    Resume resume = Resume::none;
    std::optional<std::uint32_t> resume_at;  // "c ADDR" / "s ADDR"
};

class RspCommands {
public:
    explicit RspCommands(DebugTarget& target) : target_(target) {}

    CommandResult handle(std::string_view packet);
    // After QStartNoAckMode neither side sends '+'/'-' any more.
    bool no_ack() const { return no_ack_; }

private:
    std::string query(std::string_view packet);
    std::string read_register(std::string_view args);
    std::string write_register(std::string_view args);
    std::string write_all_registers(std::string_view hex);
    std::string read_memory(std::string_view args);
    std::string write_memory(std::string_view args);
    std::string breakpoint(std::string_view packet, bool insert);
    std::string features(std::string_view args);

    DebugTarget& target_;
    bool no_ack_ = false;
};

// The target description gdb reads: an ARM M-profile core (org.gnu.gdb.arm.m-profile).
std::string_view target_xml();

}  // namespace jal::emu::gdb
