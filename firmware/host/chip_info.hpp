// Facts about this boot that several parts report (identify, telemetry, logs).
#pragma once

#include <cstdint>

#include "jal/hw/admin.h"

namespace jal::fw::host {

struct ChipInfo {
    std::uint32_t state = JAL_CHIP_STATE_BOOTING;  // enum jal_chip_state
    std::uint32_t chip_index = 0;
    std::uint32_t boot_count = 0;
    std::uint32_t reset_cause = 0;
    std::uint64_t boot_start_us = 0;
};

}  // namespace jal::fw::host
