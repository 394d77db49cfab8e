// How one emulated chip is built: its bring-up faults and environment (jal-emu options).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace jal::emu {

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
};

}  // namespace jal::emu
