// Moving the compute clock and core voltage together without ever running a clock the
// voltage cannot support: lowering writes the clock first, raising the voltage first.
#pragma once

#include <cstdint>

#include "firmware/hal/hal.hpp"
#include "jal/hw/mgmt.h"

namespace jal::fw::power {

inline std::uint32_t voltage_for(std::uint32_t mhz)
{
    const std::uint32_t mv = jal_vf_min_mv(mhz);
    return mv < JAL_VOLTAGE_MIN_MV   ? JAL_VOLTAGE_MIN_MV
           : mv > JAL_VOLTAGE_MAX_MV ? JAL_VOLTAGE_MAX_MV
                                     : mv;
}

// Moves from (cur_mhz, cur_mv) to new_mhz at its V/F voltage.
inline void set_operating_point(std::uint32_t cur_mhz, std::uint32_t cur_mv, std::uint32_t new_mhz)
{
    const std::uint32_t new_mv = voltage_for(new_mhz);
    if (new_mhz < cur_mhz) {
        hal::write32(JAL_PWR_CLOCK_MHZ, new_mhz);
        if (new_mv != cur_mv) hal::write32(JAL_PWR_VOLTAGE_MV, new_mv);
    } else if (new_mhz > cur_mhz) {
        if (new_mv != cur_mv) hal::write32(JAL_PWR_VOLTAGE_MV, new_mv);
        hal::write32(JAL_PWR_CLOCK_MHZ, new_mhz);
    } else if (new_mv != cur_mv) {
        hal::write32(JAL_PWR_VOLTAGE_MV, new_mv);
    }
}

}  // namespace jal::fw::power
