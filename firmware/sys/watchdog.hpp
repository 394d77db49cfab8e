// The management core's watchdog: armed once at boot, fed from the superloop and from
// every long boot step (HBM training takes far longer than one timeout).
#pragma once

#include <cstdint>

#include "firmware/hal/hal.hpp"
#include "jal/hw/mgmt.h"

namespace jal::fw::sys {

inline constexpr std::uint32_t kWatchdogTimeoutMs = 50;

inline void watchdog_arm(std::uint32_t timeout_ms = kWatchdogTimeoutMs)
{
    hal::write32(JAL_WDT_TIMEOUT_MS, timeout_ms);
    hal::write32(JAL_WDT_FEED, JAL_WDT_FEED_MAGIC);
    hal::write32(JAL_WDT_CTRL, 1);
}

inline void watchdog_feed()
{
    hal::write32(JAL_WDT_FEED, JAL_WDT_FEED_MAGIC);
}

}  // namespace jal::fw::sys
