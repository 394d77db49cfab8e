// Event codes of the event log (jal_log_event.code), per source: the contract's
// (include/jal/hw/events.h, which also names each argument) under the firmware's names.
#pragma once

#include <cstdint>

#include "jal/hw/events.h"

namespace jal::fw::host {

enum EventCode : std::uint16_t {
    kEvBootStart = JAL_EVENT_BOOT_START,
    kEvBootStep = JAL_EVENT_BOOT_STEP,
    kEvBootStepFailed = JAL_EVENT_BOOT_STEP_FAILED,
    kEvBootDone = JAL_EVENT_BOOT_DONE,
    kEvLinksTrained = JAL_EVENT_LINKS_TRAINED,
    kEvSliceHarvest = JAL_EVENT_SLICE_HARVEST,
    kEvSliceTooFew = JAL_EVENT_SLICE_TOO_FEW,
    kEvSliceNoMemory = JAL_EVENT_SLICE_NO_MEMORY,
    kEvHbmChannelFailed = JAL_EVENT_HBM_CHANNEL_FAILED,
    kEvHbmChannelRepaired = JAL_EVENT_HBM_CHANNEL_REPAIRED,
    kEvHbmStackFailed = JAL_EVENT_HBM_STACK_FAILED,
    kEvHbmTrained = JAL_EVENT_HBM_TRAINED,
    kEvThrottleBegin = JAL_EVENT_THROTTLE_BEGIN,
    kEvThrottleEnd = JAL_EVENT_THROTTLE_END,
    kEvEmergency = JAL_EVENT_EMERGENCY,
    kEvPowerLimitSet = JAL_EVENT_POWER_LIMIT_SET,
    kEvThermalTrip = JAL_EVENT_THERMAL_TRIP,
    kEvAdminQueueEnabled = JAL_EVENT_ADMIN_QUEUE_ENABLED,
    kEvAdminQueueError = JAL_EVENT_ADMIN_QUEUE_ERROR,
    kEvAdminCommandError = JAL_EVENT_ADMIN_COMMAND_ERROR,
    kEvAdminReset = JAL_EVENT_ADMIN_RESET,
    kEvAdminHang = JAL_EVENT_ADMIN_HANG,
    kEvContextCreated = JAL_EVENT_CONTEXT_CREATED,
    kEvContextDestroyed = JAL_EVENT_CONTEXT_DESTROYED,
    kEvFunctionCleanup = JAL_EVENT_FUNCTION_CLEANUP,
    kEvUserQueueError = JAL_EVENT_USER_QUEUE_ERROR,
    kEvMmuError = JAL_EVENT_MMU_ERROR,
    kEvDebugFault = JAL_EVENT_DEBUG_FAULT,
    kEvPageRetired = JAL_EVENT_PAGE_RETIRED,
    kEvWatchdogRecovery = JAL_EVENT_WATCHDOG_RECOVERY,
    kEvLinkUp = JAL_EVENT_LINK_UP,
    kEvLinkDegraded = JAL_EVENT_LINK_DEGRADED,
    kEvLinkDown = JAL_EVENT_LINK_DOWN,
};

}  // namespace jal::fw::host
