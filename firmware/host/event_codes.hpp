// Event codes of the event log (jal_log_event.code), per source. Extend only: hosts may
// match on them.
#pragma once

#include <cstdint>

namespace jal::fw::host {

enum EventCode : std::uint16_t {
    // JAL_SRC_BOOT
    kEvBootStart = 0x0100,       // args: reset cause, boot count
    kEvBootStep = 0x0101,        // args: step, post code, status
    kEvBootStepFailed = 0x0102,  // args: step, post code, status, fatal
    kEvBootDone = 0x0103,        // args: hostif status, fault
    // JAL_SRC_SLICE
    kEvSliceHarvest = 0x0200,   // args: enabled, fused, bist failed, bist timeout
    kEvSliceTooFew = 0x0201,    // args: enabled, minimum
    kEvSliceNoMemory = 0x0202,  // args: slice
    // JAL_SRC_HBM
    kEvHbmChannelFailed = 0x0300,    // args: channel, dead lanes, reason
    kEvHbmChannelRepaired = 0x0301,  // args: channel, repaired lanes
    kEvHbmStackFailed = 0x0302,      // args: stack, failed channels
    kEvHbmTrained = 0x0303,          // args: ok, repaired, failed, untrained
    // JAL_SRC_POWER
    kEvThrottleBegin = 0x0400,  // args: limiter, clock, power, limit
    kEvThrottleEnd = 0x0401,    // args: residency ms of the episode
    kEvEmergency = 0x0402,      // args: power, limit, emergency ticks since the last logged one
    kEvPowerLimitSet = 0x0403,  // args: new limit
    kEvThermalTrip = 0x0404,    // args: junction m°C, critical m°C, power mW
    // JAL_SRC_ADMIN
    kEvAdminQueueEnabled = 0x0500,  // args: fn, sq size, cq size
    kEvAdminQueueError = 0x0501,    // args: fn, status
    kEvAdminCommandError = 0x0502,  // args: fn, opcode, status, cid
    kEvAdminReset = 0x0503,         // args: fn
    kEvAdminHang = 0x0504,          // args: fn
    kEvContextCreated = 0x0505,     // args: fn, context
    kEvContextDestroyed = 0x0506,   // args: fn, context, allocations and queues it still held
    kEvFunctionCleanup = 0x0507,    // args: fn, contexts, allocations, queues (detach/re-attach)
    kEvUserQueueError = 0x0508,     // args: queue, context, errors, last error | state << 24
    kEvMmuError = 0x0509,           // args: MMU command, status (or count), context, va page
    // JAL_SRC_WATCHDOG
    kEvWatchdogRecovery = 0x0600,  // args: boot count
};

}  // namespace jal::fw::host
