// jal-emu's command line.
#pragma once

#include "emu/chip/chip_config.hpp"
#include "emu/transport/connection.hpp"

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace jal::emu {

struct EmuOptions {
    std::string socket_dir;
    std::uint32_t chips = 1;
    std::string log_file;
    std::string trace_file;  // --trace
    std::string trace_ops;   // --trace-ops: slices whose engine ops the trace holds
    bool verbose = false;
    ChipConfig chip;                        // applies to every chip; index is filled per chip
    SessionPolicy session;                  // per connection, for every chip (docs/security.md)
    std::vector<std::uint32_t> allow_uids;  // client uids served besides our own and root
    int gdb_port = -1;                      // --gdb: chip i on gdb_port + i (0: any free port)
    // A fabric domain of several jal-emu processes (docs/fabric.md): its topology file,
    // this process's name in it, and how long the others have to join.
    std::string domain_file, process_name;
    double join_timeout_s = 60, fabric_timeout_s = 10;
    bool chips_given = false;  // --chips was on the command line
};

// Parses argv; prints help or an error and exits on bad input.
EmuOptions parse_options(int argc, char** argv);

// "3,17,40-43" -> slice bit mask. Throws std::invalid_argument with a precise message.
std::uint64_t parse_slice_list(const std::string& text);
// "5:12,7:0" -> (channel, lane) pairs. Throws std::invalid_argument.
std::vector<std::pair<std::uint32_t, std::uint32_t>> parse_lane_list(const std::string& text);

}  // namespace jal::emu
