#include "firmware/power/limiter.hpp"

namespace jal::fw::power {

std::uint32_t ProportionalLimiter::update(std::uint32_t measure, std::uint32_t limit,
                                          std::uint32_t clock_mhz)
{
    if (clock_mhz < JAL_CLOCK_MIN_MHZ) clock_mhz = JAL_CLOCK_MIN_MHZ;
    if (measure == 0) {  // nothing drawn (or no sensor): no reason to hold the clock
        ceiling_ = JAL_CLOCK_MAX_MHZ;
        return ceiling_;
    }
    if (measure > limit) {
        // Cut from the operating point, not from a ceiling another limiter made irrelevant.
        const std::uint64_t excess = measure - limit;
        std::uint64_t cut = (std::uint64_t{clock_mhz} * excess + measure - 1) / measure;
        cut = (cut + JAL_CLOCK_STEP_MHZ - 1) / JAL_CLOCK_STEP_MHZ * JAL_CLOCK_STEP_MHZ;
        if (cut < JAL_CLOCK_STEP_MHZ) cut = JAL_CLOCK_STEP_MHZ;
        const std::uint32_t base = ceiling_ < clock_mhz ? ceiling_ : clock_mhz;
        ceiling_ = clamp_clock(static_cast<std::int64_t>(base) - static_cast<std::int64_t>(cut));
        return ceiling_;
    }
    const std::uint64_t headroom = limit - measure;
    // Predicted rise of one clock step: measure * e * step / clock.
    const std::uint64_t one_step =
        (std::uint64_t{measure} * kElasticity * JAL_CLOCK_STEP_MHZ + clock_mhz - 1) / clock_mhz;
    if (headroom < one_step) return ceiling_;  // at the limit: hold
    std::uint64_t raise =
        std::uint64_t{clock_mhz} * headroom / (std::uint64_t{measure} * kElasticity);
    raise = raise / JAL_CLOCK_STEP_MHZ * JAL_CLOCK_STEP_MHZ;
    if (raise < JAL_CLOCK_STEP_MHZ) raise = JAL_CLOCK_STEP_MHZ;
    const std::uint32_t proposed =
        clamp_clock(static_cast<std::int64_t>(clock_mhz) + static_cast<std::int64_t>(raise));
    if (proposed > ceiling_) ceiling_ = proposed;  // headroom never lowers a ceiling
    return ceiling_;
}

std::uint32_t ThermalLimiter::update(std::int32_t temp_mc, std::int32_t limit_mc,
                                     std::uint32_t clock_mhz)
{
    if (++ticks_ < kPeriodTicks) return ceiling_;
    ticks_ = 0;
    if (temp_mc > limit_mc) {
        const std::int64_t steps = 1 + (static_cast<std::int64_t>(temp_mc) - limit_mc) / kMcPerStep;
        const std::uint32_t base = ceiling_ < clock_mhz ? ceiling_ : clock_mhz;
        ceiling_ = clamp_clock(static_cast<std::int64_t>(base) - steps * JAL_CLOCK_STEP_MHZ);
    } else if (temp_mc < limit_mc - kHysteresisMc && ceiling_ < JAL_CLOCK_MAX_MHZ) {
        ceiling_ = clamp_clock(static_cast<std::int64_t>(ceiling_) + JAL_CLOCK_STEP_MHZ);
    }
    return ceiling_;
}

std::uint32_t MovingAverage::add(std::uint32_t sample, std::uint32_t cap)
{
    const std::uint64_t x = std::uint64_t{sample} << 8;
    if (!seeded_) {
        avg_x256_ = (sample < cap ? sample : cap) * std::uint64_t{256};
        seeded_ = true;
    } else if (x >= avg_x256_) {
        avg_x256_ += (x - avg_x256_) / kWindowTicks;
    } else {
        avg_x256_ -= (avg_x256_ - x) / kWindowTicks;
    }
    return value();
}

}  // namespace jal::fw::power
