// Limiters: each is a small incremental controller that turns one measurement against its
// limit into a clock ceiling (tt dvfs/throttler style). The power manager takes the
// minimum. Pure arithmetic, no hardware access, so it can be tested on its own.
#pragma once

#include <cstdint>

#include "jal/hw/mgmt.h"

namespace jal::fw::power {

// Rounds down onto the clock grid JAL_CLOCK_MIN_MHZ + k * JAL_CLOCK_STEP_MHZ, clamped.
constexpr std::uint32_t clamp_clock(std::int64_t mhz)
{
    if (mhz <= JAL_CLOCK_MIN_MHZ) return JAL_CLOCK_MIN_MHZ;
    if (mhz >= JAL_CLOCK_MAX_MHZ) return JAL_CLOCK_MAX_MHZ;
    const auto above = static_cast<std::uint32_t>(mhz) - JAL_CLOCK_MIN_MHZ;
    return JAL_CLOCK_MIN_MHZ + above / JAL_CLOCK_STEP_MHZ * JAL_CLOCK_STEP_MHZ;
}

// For quantities that grow faster than linearly with the clock (power ~ f*V^2 with V rising
// along the V/F curve; current ~ f*V). Over the limit the clock is cut in proportion to the
// excess (one step at least), so a large overshoot is corrected in one or two ticks. Under
// the limit it is raised in proportion to the headroom, but only when even one more step
// (predicted with a pessimistic elasticity) would still fit: so it approaches the limit from
// below and then holds, instead of hunting around it.
class ProportionalLimiter {
public:
    // d(ln measure)/d(ln clock) assumed when predicting a raise: power's is about 1.4-1.7
    // with static power included, so 2 is on the safe side.
    static constexpr std::uint32_t kElasticity = 2;

    explicit ProportionalLimiter(std::uint32_t ceiling_mhz = JAL_CLOCK_MAX_MHZ)
        : ceiling_(ceiling_mhz)
    {}

    // measure and limit in the same unit; clock_mhz is the clock that produced measure.
    std::uint32_t update(std::uint32_t measure, std::uint32_t limit, std::uint32_t clock_mhz);
    std::uint32_t ceiling() const { return ceiling_; }
    void set_ceiling(std::uint32_t mhz) { ceiling_ = clamp_clock(mhz); }

private:
    std::uint32_t ceiling_;
};

// Junction temperature responds with a time constant of ~150 ms, far slower than the 1 ms
// tick: a per-tick integrator would wind the clock down long before the die cools. So the
// thermal limiter acts only every kPeriodTicks, cuts one step per 2 degrees of excess, and
// raises one step when kHysteresisMc below the limit.
class ThermalLimiter {
public:
    static constexpr std::uint32_t kPeriodTicks = 10;
    static constexpr std::int32_t kHysteresisMc = 3000;
    static constexpr std::int32_t kMcPerStep = 2000;

    std::uint32_t update(std::int32_t temp_mc, std::int32_t limit_mc, std::uint32_t clock_mhz);
    std::uint32_t ceiling() const { return ceiling_; }
    void set_ceiling(std::uint32_t mhz) { ceiling_ = clamp_clock(mhz); }

private:
    std::uint32_t ceiling_ = JAL_CLOCK_MAX_MHZ;
    std::uint32_t ticks_ = 0;
};

// Exponential moving average of power for the sustained limiter: avg += (x - avg) / N,
// kept with 8 fractional bits.
class MovingAverage {
public:
    static constexpr std::uint32_t kWindowTicks = 100;

    // The first sample seeds the average, capped at `cap`: history before the manager
    // started is unknown, and a boot-time spike must not throttle for a whole window.
    std::uint32_t add(std::uint32_t sample, std::uint32_t cap);
    std::uint32_t value() const { return static_cast<std::uint32_t>(avg_x256_ >> 8); }

private:
    std::uint64_t avg_x256_ = 0;
    bool seeded_ = false;
};

}  // namespace jal::fw::power
