// The boot sequence as one table (tt-zephyr-platforms sys_init_defines.h style): each step
// has its POST code, a name, whether its failure stops the boot, and the function that
// runs it. The runner is generic over the context so tests can drive it with their own.
#pragma once

#include <cstdint>
#include <span>

#include "firmware/boot/post_trail.hpp"
#include "firmware/hal/hal.hpp"
#include "firmware/host/event_codes.hpp"
#include "firmware/host/journal.hpp"
#include "firmware/sys/watchdog.hpp"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

namespace jal::fw::boot {

template <typename Ctx>
struct BootStep {
    std::uint16_t post_code;
    const char* name;
    bool fatal;
    std::uint32_t (*run)(Ctx&);  // returns a jal_status
};

struct BootOutcome {
    bool failed = false;                  // a fatal step failed
    std::uint32_t fault = JAL_STATUS_OK;  // its status
    std::uint32_t failed_step = 0;
    std::uint32_t nonfatal_failures = 0;
};

// Runs the steps in order. Each step: POST code to JAL_HOSTIF_POST_CODE, run, then
// BOOT_STATUS = step << 16 | status and a POST trail entry (timestamped at the step's
// start). A fatal failure stops the table; a non-fatal one is logged and the boot goes on.
template <typename Ctx>
[[nodiscard]] BootOutcome run_boot_table(std::span<const BootStep<Ctx>> steps, Ctx& ctx,
                                         PostTrail& trail, host::Journal& journal)
{
    BootOutcome out;
    for (std::uint32_t i = 0; i < steps.size(); ++i) {
        const BootStep<Ctx>& step = steps[i];
        hal::write32(JAL_HOSTIF_POST_CODE, step.post_code);
        const std::uint64_t start = hal::now_us();
        const std::uint32_t status = step.run(ctx);
        hal::write32(JAL_HOSTIF_BOOT_STATUS, i << 16 | (status & 0xffffu));
        trail.record(start, step.post_code, static_cast<std::uint16_t>(i), status);
        // Long steps feed the watchdog themselves; feed between steps too.
        sys::watchdog_feed();
        if (status == JAL_STATUS_OK) {
            journal.event(JAL_SRC_BOOT, JAL_SEV_INFO, host::kEvBootStep, step.name,
                          {i, step.post_code, status});
            continue;
        }
        journal.event(JAL_SRC_BOOT, step.fatal ? JAL_SEV_FATAL : JAL_SEV_ERROR,
                      host::kEvBootStepFailed, step.name,
                      {i, step.post_code, status, step.fatal ? 1u : 0u});
        if (step.fatal) {
            out.failed = true;
            out.fault = status;
            out.failed_step = i;
            return out;
        }
        ++out.nonfatal_failures;
    }
    return out;
}

}  // namespace jal::fw::boot
