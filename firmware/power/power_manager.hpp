// Power and thermal management, run every 1 ms tick: samples the sensors into the
// telemetry table, runs the limiters, moves clock and voltage, records the limiting
// reason and residency, and power-gates idle slices.
#pragma once

#include <array>
#include <cstdint>

#include "firmware/host/journal.hpp"
#include "firmware/power/limiter.hpp"
#include "firmware/slices/slice_manager.hpp"
#include "jal/hw/telemetry.h"

namespace jal::fw::power {

class PowerManager {
public:
    PowerManager(slices::SliceManager& slices, host::Journal& journal)
        : slices_(slices), journal_(journal)
    {}

    // Boot: a safe operating point (minimum clock) before slices come out of reset.
    [[nodiscard]] std::uint32_t init_safe();
    // Boot: limiters start at the clock in force and the control loop runs from now on.
    [[nodiscard]] std::uint32_t start();
    bool started() const { return started_; }

    // One tick: sample, and (once started) control. Always refreshes telemetry.
    void tick();

    // Host request; takes effect at the next tick. Returns a jal_status.
    [[nodiscard]] std::uint32_t request_power_limit(std::uint32_t mw);
    // The limit every boot starts with, kept in JAL_SYS_RETAIN(JAL_RETAIN_POWER_LIMIT) so it
    // outlives resets; also requested now. 0 clears it (boots start at the TDP again, the
    // limit in force stays). Returns a jal_status.
    [[nodiscard]] std::uint32_t request_persistent_limit(std::uint32_t mw);
    std::uint32_t persistent_limit() const { return saved_limit_mw_; }
    std::uint32_t requested_power_limit() const { return requested_limit_mw_; }
    std::uint32_t power_limit() const { return limit_mw_; }

    jal_telemetry& telemetry() { return telem_; }
    const jal_telemetry& telemetry() const { return telem_; }
    std::uint32_t limiter() const { return limiter_; }

    // Counters the rest of the firmware contributes to the telemetry table.
    void set_boot_info(std::uint64_t boot_start_us, std::uint32_t watchdog_resets)
    {
        boot_start_us_ = boot_start_us;
        telem_.watchdog_resets = watchdog_resets;
    }
    void set_admin_commands(std::uint32_t n) { telem_.admin_commands = n; }
    void set_retired_pages(std::uint32_t n) { telem_.retired_pages = n; }

    // The controllers regulate to a guard band just under each limit: leakage grows as the
    // die warms (slowly, over hundreds of ticks), and the band absorbs that creep before it
    // can cross the limit itself.
    static constexpr std::uint32_t kGuardDiv = 128;
    static constexpr std::uint32_t guarded(std::uint32_t limit)
    {
        return limit - limit / kGuardDiv;
    }

    // Emergency threshold: power above 5/4 of the limit drops the clock to minimum at once.
    // A limit lowered under the present draw is not an emergency: the power limiters ramp
    // the clock down to it, and the threshold follows the draw down meanwhile (never up),
    // so a real surge during the ramp still trips.
    static constexpr std::uint32_t kEmergencyNum = 5, kEmergencyDen = 4;
    // A lasting emergency is logged when it starts and then once a second (with the count of
    // emergency ticks in between), so it cannot push the boot history out of the event log.
    static constexpr std::uint32_t kEmergencyLogTicks = 1000;

    // Thermal trip: once the junction reaches JAL_TEMP_CRITICAL_MC the compute die is shut
    // down (every slice gated, minimum clock) until the chip is reset; the firmware fails the
    // chip with JAL_STATUS_THERMAL_TRIP. The limiters could not hold the die, so nothing may
    // run on it: the trip is not a limiter and does not end when the die cools.
    bool tripped() const { return tripped_; }

private:
    void sample();
    void control();
    bool check_trip();
    std::uint32_t emergency();  // minimum clock now; returns it
    // start(): applies a persistent limit a previous boot saved.
    void load_persistent_limit();
    // What "far over the limit" is measured against this tick: the limit, or while the clock
    // ramps down to a limit just lowered under the draw, the draw on its way down.
    std::uint32_t emergency_reference(std::uint32_t power_mw);

    slices::SliceManager& slices_;
    host::Journal& journal_;
    jal_telemetry telem_{};
    bool started_ = false;
    std::uint32_t limit_mw_ = JAL_POWER_TDP_MW;
    std::uint32_t requested_limit_mw_ = JAL_POWER_TDP_MW;
    std::uint32_t saved_limit_mw_ = 0;  // persistent limit, 0: none
    std::uint32_t ramp_ref_mw_ = 0;     // > limit_mw_ while ramping down to a lowered limit
    ProportionalLimiter fast_{JAL_CLOCK_MIN_MHZ}, slow_{JAL_CLOCK_MIN_MHZ},
        current_{JAL_CLOCK_MIN_MHZ};
    ThermalLimiter thermal_;
    MovingAverage avg_;
    std::uint32_t limiter_ = JAL_LIMITER_NONE;
    std::uint32_t episode_ms_ = 0;
    std::uint32_t emergency_unlogged_ = 0;  // emergency ticks since the last logged one
    std::uint32_t emergency_log_age_ = 0;   // ticks since the last logged emergency
    bool tripped_ = false;
    std::uint64_t boot_start_us_ = 0;
};

}  // namespace jal::fw::power
