// How one emulated chip is built: its bring-up faults and environment (jal-emu options).
#pragma once

#include "emu/chip/chip_links.hpp"
#include "emu/chip/link_fabric.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace jal::emu {

class TraceWriter;

enum class FirmwareMode { native, image };

struct ChipConfig {
    std::uint32_t index = 0;
    std::uint64_t seed = 1;
    std::uint64_t fused_slices = 0;                                   // --fuse-slices
    std::uint64_t failing_slices = 0;                                 // --fail-slices
    std::vector<std::pair<std::uint32_t, std::uint32_t>> dead_lanes;  // --bad-lanes CH:LANE
    double load_watts = 0;                                            // --load-watts
    double ambient_c = 25;                                            // --ambient-c
    double speed = 1.0;  // modelled seconds per wall second; 0 = unpaced
    FirmwareMode firmware = FirmwareMode::native;
    std::string firmware_image;  // --fw-image, for FirmwareMode::image
    bool debuggable = false;     // --gdb: the image's core can be halted by a debugger
    bool debug_wait = false;     // --gdb-wait: held at power-on until a debugger resumes it
    // What one host function (client) may hold: room for others (docs/security.md).
    std::uint32_t max_contexts_per_fn = 16;     // --max-contexts-per-client, 0 = no limit
    std::uint32_t max_queues_per_fn = 64;       // --max-queues-per-client, 0 = no limit
    std::uint32_t max_memory_pages_per_fn = 0;  // --max-memory-per-client in pages, 0 = none
    std::shared_ptr<TraceWriter> trace;         // --trace, shared by the chips (null: none)
    std::uint64_t trace_op_slices = 0;          // --trace-ops (physical slices)
    // In a fabric domain (jal-emu --domain): the chip's id across the domain and the ports
    // its topology connects.
    std::uint32_t domain_chip = 0;
    std::vector<LinkPortConfig> links;
    // The switch planes and the other chips of this process (a tray, or the process's share
    // of a domain); null: the chip stands alone.
    std::shared_ptr<LinkFabric> fabric;
};

}  // namespace jal::emu
