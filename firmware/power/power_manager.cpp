#include "firmware/power/power_manager.hpp"

#include "firmware/hal/hal.hpp"
#include "firmware/host/event_codes.hpp"
#include "firmware/power/vf.hpp"
#include "firmware/util/mask64.hpp"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

namespace jal::fw::power {

std::uint32_t PowerManager::init_safe()
{
    const std::uint32_t cur_mhz = hal::read32(JAL_PWR_CLOCK_MHZ);
    const std::uint32_t cur_mv = hal::read32(JAL_PWR_VOLTAGE_MV);
    set_operating_point(cur_mhz, cur_mv, JAL_CLOCK_MIN_MHZ);
    // Trust the registers: the clock must have taken the safe value.
    if (hal::read32(JAL_PWR_CLOCK_MHZ) != JAL_CLOCK_MIN_MHZ) return JAL_STATUS_HW_FAILED;
    if (hal::read32(JAL_PWR_VOLTAGE_MV) < jal_vf_min_mv(JAL_CLOCK_MIN_MHZ))
        return JAL_STATUS_HW_FAILED;
    return JAL_STATUS_OK;
}

std::uint32_t PowerManager::start()
{
    const std::uint32_t clock = clamp_clock(hal::read32(JAL_PWR_CLOCK_MHZ));
    fast_.set_ceiling(clock);
    slow_.set_ceiling(clock);
    current_.set_ceiling(clock);
    load_persistent_limit();
    started_ = true;
    return JAL_STATUS_OK;
}

void PowerManager::load_persistent_limit()
{
    const std::uint32_t saved = hal::read32(JAL_SYS_RETAIN(JAL_RETAIN_POWER_LIMIT));
    if (saved == 0) return;
    if (saved < JAL_POWER_LIMIT_MIN_MW || saved > JAL_POWER_LIMIT_MAX_MW) {
        // Not a value this firmware would have saved: forget it rather than boot under it.
        hal::write32(JAL_SYS_RETAIN(JAL_RETAIN_POWER_LIMIT), 0);
        return;
    }
    saved_limit_mw_ = limit_mw_ = requested_limit_mw_ = saved;
    telem_.power_limit_mw = saved;
    journal_.event(JAL_SRC_POWER, JAL_SEV_INFO, host::kEvPowerLimitSet, "persistent power limit",
                   {saved, 1});
}

std::uint32_t PowerManager::request_power_limit(std::uint32_t mw)
{
    if (mw < JAL_POWER_LIMIT_MIN_MW || mw > JAL_POWER_LIMIT_MAX_MW) return JAL_STATUS_INVALID_FIELD;
    requested_limit_mw_ = mw;
    return JAL_STATUS_OK;
}

std::uint32_t PowerManager::request_persistent_limit(std::uint32_t mw)
{
    if (mw != 0) {
        const std::uint32_t status = request_power_limit(mw);
        if (status != JAL_STATUS_OK) return status;
    }
    saved_limit_mw_ = mw;
    hal::write32(JAL_SYS_RETAIN(JAL_RETAIN_POWER_LIMIT), mw);
    telem_.power_limit_saved_mw = mw;
    return JAL_STATUS_OK;
}

std::uint32_t PowerManager::emergency_reference(std::uint32_t power_mw)
{
    if (ramp_ref_mw_ <= limit_mw_) {
        ramp_ref_mw_ = 0;
        return limit_mw_;
    }
    if (power_mw < ramp_ref_mw_) ramp_ref_mw_ = power_mw > limit_mw_ ? power_mw : limit_mw_;
    return ramp_ref_mw_ > limit_mw_ ? ramp_ref_mw_ : limit_mw_;
}

void PowerManager::sample()
{
    jal_telemetry& t = telem_;
    t.struct_size = sizeof(jal_telemetry);
    ++t.seq;
    const std::uint64_t now = hal::now_us();
    t.timestamp_us = now;
    t.uptime_us = now - boot_start_us_;
    t.power_mw = hal::read32(JAL_PWR_POWER_MW);
    for (std::uint32_t r = 0; r < JAL_RAIL_COUNT; ++r) {
        t.rail_current_ma[r] = hal::read32(JAL_PWR_RAIL_CURRENT_MA(r));
        t.rail_voltage_mv[r] = hal::read32(JAL_PWR_RAIL_VOLTAGE_MV(r));
    }
    t.temp_junction_mc = static_cast<std::int32_t>(hal::read32(JAL_PWR_TEMP_JUNCTION_MC));
    t.temp_hbm_mc = static_cast<std::int32_t>(hal::read32(JAL_PWR_TEMP_HBM_MC));
    t.temp_ambient_mc = static_cast<std::int32_t>(hal::read32(JAL_PWR_TEMP_AMBIENT_MC));
    t.temp_limit_mc = JAL_TEMP_LIMIT_MC;
    t.clock_mhz = hal::read32(JAL_PWR_CLOCK_MHZ);
    t.voltage_mv = hal::read32(JAL_PWR_VOLTAGE_MV);
    t.clock_max_mhz = JAL_CLOCK_MAX_MHZ;
    t.current_limit_ma = JAL_CORE_CURRENT_LIMIT_MA;
    const std::uint32_t e_lo = hal::read32(JAL_PWR_ENERGY_UJ_LO);
    const std::uint32_t e_hi = hal::read32(JAL_PWR_ENERGY_UJ_HI);
    t.energy_uj = std::uint64_t{e_hi} << 32 | e_lo;
    t.ecc_corrected = hal::read32(JAL_PWR_ECC_CORRECTED);
    t.ecc_uncorrected = hal::read32(JAL_PWR_ECC_UNCORRECTED);
    t.utilisation_pm = hal::read32(JAL_PWR_ACTIVITY_PM);
    t.clock_min_mhz = JAL_CLOCK_MIN_MHZ;
    t.power_limit_saved_mw = saved_limit_mw_;
    t.links_connected = util::popcount64(hal::read32(JAL_LINK_CONNECTED_MASK));
    t.links_up = util::popcount64(hal::read32(JAL_LINK_UP_MASK));
    t.link_errors = hal::read32(JAL_LINK_ERRORS_TOTAL);
}

void PowerManager::control()
{
    jal_telemetry& t = telem_;
    if (requested_limit_mw_ != limit_mw_) {
        // A lowered limit: ramp down from the draw, not an emergency (see emergency_reference).
        if (requested_limit_mw_ < limit_mw_ && t.power_mw > ramp_ref_mw_) ramp_ref_mw_ = t.power_mw;
        limit_mw_ = requested_limit_mw_;
        journal_.event(JAL_SRC_POWER, JAL_SEV_INFO, host::kEvPowerLimitSet, "power limit set",
                       {limit_mw_, limit_mw_ == saved_limit_mw_ ? 1u : 0u});
    }
    const std::uint32_t clock = t.clock_mhz;
    t.power_avg_mw = avg_.add(t.power_mw, limit_mw_);

    std::uint32_t target;
    std::uint32_t reason = JAL_LIMITER_NONE;
    if (emergency_log_age_ < kEmergencyLogTicks) ++emergency_log_age_;  // saturates
    if (check_trip()) {
        target = JAL_CLOCK_MIN_MHZ;
        reason = JAL_LIMITER_THERMAL;
    } else if (std::uint64_t{t.power_mw} * kEmergencyDen >
               std::uint64_t{emergency_reference(t.power_mw)} * kEmergencyNum) {
        target = emergency();
        reason = JAL_LIMITER_EMERGENCY;
    } else {
        const std::uint32_t power_target = guarded(limit_mw_);
        // The average lags: when it is over the limit but the power already is not, it will
        // fall by itself, and cutting further would only overcorrect (e.g. after an
        // emergency dropped the clock). The slow limiter holds then.
        const bool avg_falling = t.power_avg_mw > power_target && t.power_mw <= power_target;
        const std::uint32_t ceilings[] = {
            fast_.update(t.power_mw, power_target, clock),
            avg_falling ? slow_.ceiling() : slow_.update(t.power_avg_mw, power_target, clock),
            current_.update(t.rail_current_ma[JAL_RAIL_CORE], guarded(JAL_CORE_CURRENT_LIMIT_MA),
                            clock),
            thermal_.update(t.temp_junction_mc, JAL_TEMP_LIMIT_MC, clock),
        };
        static constexpr std::uint32_t kReasons[] = {JAL_LIMITER_FAST_POWER, JAL_LIMITER_SLOW_POWER,
                                                     JAL_LIMITER_CURRENT, JAL_LIMITER_THERMAL};
        target = JAL_CLOCK_MAX_MHZ;
        for (std::uint32_t i = 0; i < 4; ++i)
            if (ceilings[i] < target) {
                target = ceilings[i];
                reason = kReasons[i];
            }
        target = clamp_clock(target);
    }
    set_operating_point(clock, t.voltage_mv, target);
    t.clock_target_mhz = target;
    t.limiter = reason;
    t.power_limit_mw = limit_mw_;
    ++t.limiter_residency_ms[reason];  // one tick = 1 ms

    if (reason != JAL_LIMITER_NONE && limiter_ == JAL_LIMITER_NONE) {
        ++t.throttle_events;
        episode_ms_ = 0;
        journal_.event(JAL_SRC_POWER, JAL_SEV_INFO, host::kEvThrottleBegin,
                       jal_limiter_name(reason), {reason, target, t.power_mw, limit_mw_});
    } else if (reason == JAL_LIMITER_NONE && limiter_ != JAL_LIMITER_NONE) {
        journal_.event(JAL_SRC_POWER, JAL_SEV_INFO, host::kEvThrottleEnd, "throttling ended",
                       {episode_ms_});
    }
    if (reason != JAL_LIMITER_NONE) ++episode_ms_;
    limiter_ = reason;
}

bool PowerManager::check_trip()
{
    const jal_telemetry& t = telem_;
    if (!tripped_ && t.temp_junction_mc >= JAL_TEMP_CRITICAL_MC) {
        tripped_ = true;
        journal_.event(JAL_SRC_POWER, JAL_SEV_FATAL, host::kEvThermalTrip, "thermal trip",
                       {static_cast<std::uint32_t>(t.temp_junction_mc),
                        static_cast<std::uint32_t>(JAL_TEMP_CRITICAL_MC), t.power_mw});
    }
    return tripped_;
}

std::uint32_t PowerManager::emergency()
{
    // Far over the limit: no time for a controller. Minimum clock now; the power limiters
    // climb back from there. The slow limiter keeps its ceiling: its average barely moved in
    // one tick, and resetting it would pin the clock at minimum for a whole averaging window.
    jal_telemetry& t = telem_;
    const std::uint32_t target = JAL_CLOCK_MIN_MHZ;
    fast_.set_ceiling(target);
    current_.set_ceiling(target);
    ++t.emergency_events;
    ++emergency_unlogged_;
    if (limiter_ != JAL_LIMITER_EMERGENCY || emergency_log_age_ >= kEmergencyLogTicks) {
        journal_.event(JAL_SRC_POWER, JAL_SEV_WARN, host::kEvEmergency, "power emergency",
                       {t.power_mw, limit_mw_, emergency_unlogged_});
        emergency_unlogged_ = 0;
        emergency_log_age_ = 0;
    }
    return target;
}

void PowerManager::tick()
{
    sample();
    if (started_) {
        control();
        // A tripped die stays fully gated whatever the queues would run.
        const std::uint64_t busy =
            tripped_ ? 0 : util::read_mask64(JAL_SLICE_BUSY_LO, JAL_SLICE_BUSY_HI);
        telem_.slices_powered = slices_.update_gating(busy);
        telem_.slices_busy = util::popcount64(busy);
    } else {
        telem_.power_limit_mw = limit_mw_;
        telem_.clock_target_mhz = telem_.clock_mhz;
    }
}

}  // namespace jal::fw::power
