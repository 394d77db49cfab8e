#include "emu/chip/slices.hpp"

#include "emu/chip/seeded.hpp"
#include "jal/hw/mgmt.h"

#include <bit>

namespace jal::emu {

namespace {
constexpr std::uint32_t reg(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_SLICE;
}
std::uint32_t lo(std::uint64_t m)
{
    return static_cast<std::uint32_t>(m);
}
std::uint32_t hi(std::uint64_t m)
{
    return static_cast<std::uint32_t>(m >> 32);
}
std::uint64_t set_lo(std::uint64_t m, std::uint32_t v)
{
    return (m & ~0xffffffffull) | v;
}
std::uint64_t set_hi(std::uint64_t m, std::uint32_t v)
{
    return (m & 0xffffffffull) | (std::uint64_t{v} << 32);
}
}  // namespace

Slices::Slices(std::uint64_t seed, std::uint64_t fused, std::uint64_t failing)
    : fused_(fused), failing_(failing)
{
    for (std::uint32_t s = 0; s < 64; ++s)
        bist_us_[s] =
            seeded_range(seed, {20, s}, JAL_SLICE_BIST_US * 3 / 4, JAL_SLICE_BIST_US * 5 / 4);
    reset();
}

void Slices::reset()
{
    bist_started_ = reset_released_ = gate_ = 0;
    enable_ = 0;
    fail_armed_ = 0;  // a chip reset resets every slice
    hang_armed_ = 0;
    for (auto& t : bist_start_us_) t = 0;
}

void Slices::arm_fault(std::uint32_t physical, Fault f)
{
    if (physical >= 64) return;
    const std::uint64_t bit = 1ull << physical;
    (f == Fault::hang ? hang_armed_ : fail_armed_).fetch_or(bit);
}

Slices::Fault Slices::take_fault(std::uint64_t physical_mask, std::uint32_t& physical)
{
    for (;;) {
        const std::uint64_t armed = (fail_armed_.load() | hang_armed_.load()) & physical_mask;
        if (!armed) return Fault::none;
        physical = static_cast<std::uint32_t>(std::countr_zero(armed));
        const std::uint64_t bit = 1ull << physical;
        // A hang outranks a failure armed on the same slice; whoever clears the bit owns it.
        if (hang_armed_.fetch_and(~bit) & bit) {
            fail_armed_.fetch_and(~bit);
            return Fault::hang;
        }
        if (fail_armed_.fetch_and(~bit) & bit) return Fault::fail;
    }
}

std::uint32_t Slices::powered_count() const
{
    return static_cast<std::uint32_t>(std::popcount(reset_released_ & ~gate_ & ~fused_));
}

// A slice finishes self-test only if it is out of reset and not fused; fused slices are
// not powered and never answer, so waiting on them times out.
std::uint64_t Slices::done_mask(std::uint64_t now_us) const
{
    std::uint64_t done = 0;
    for (std::uint32_t s = 0; s < 64; ++s) {
        const std::uint64_t bit = 1ull << s;
        if ((bist_started_ & bit) && (reset_released_ & bit) && !(fused_ & bit) &&
            now_us >= bist_start_us_[s] + bist_us_[s])
            done |= bit;
    }
    return done;
}

std::uint32_t Slices::read(std::uint32_t offset, std::uint64_t now_us) const
{
    switch (offset) {
    case reg(JAL_SLICE_FUSE_LO):
        return lo(fused_);
    case reg(JAL_SLICE_FUSE_HI):
        return hi(fused_);
    case reg(JAL_SLICE_RESET_LO):
        return lo(reset_released_);
    case reg(JAL_SLICE_RESET_HI):
        return hi(reset_released_);
    case reg(JAL_SLICE_BIST_DONE_LO):
        return lo(done_mask(now_us));
    case reg(JAL_SLICE_BIST_DONE_HI):
        return hi(done_mask(now_us));
    case reg(JAL_SLICE_BIST_PASS_LO):
        return lo(done_mask(now_us) & ~failing_);
    case reg(JAL_SLICE_BIST_PASS_HI):
        return hi(done_mask(now_us) & ~failing_);
    case reg(JAL_SLICE_ENABLE_LO):
        return lo(enabled());
    case reg(JAL_SLICE_ENABLE_HI):
        return hi(enabled());
    case reg(JAL_SLICE_GATE_LO):
        return lo(gate_);
    case reg(JAL_SLICE_GATE_HI):
        return hi(gate_);
    case reg(JAL_SLICE_BUSY_LO):
        return lo(busy());
    case reg(JAL_SLICE_BUSY_HI):
        return hi(busy());
    default:
        return 0;
    }
}

void Slices::write(std::uint32_t offset, std::uint32_t value, std::uint64_t now_us)
{
    auto start_bist = [&](std::uint64_t mask) {
        for (std::uint32_t s = 0; s < 64; ++s)
            if (mask & (1ull << s)) bist_start_us_[s] = now_us;
        bist_started_ |= mask;
    };
    switch (offset) {
    case reg(JAL_SLICE_RESET_LO):
        reset_released_ = set_lo(reset_released_, value);
        break;
    case reg(JAL_SLICE_RESET_HI):
        reset_released_ = set_hi(reset_released_, value);
        break;
    case reg(JAL_SLICE_BIST_START_LO):
        start_bist(value);
        break;
    case reg(JAL_SLICE_BIST_START_HI):
        start_bist(std::uint64_t{value} << 32);
        break;
    case reg(JAL_SLICE_ENABLE_LO):
        enable_ = set_lo(enabled(), value) & ~fused_;
        break;
    case reg(JAL_SLICE_ENABLE_HI):
        enable_ = set_hi(enabled(), value) & ~fused_;
        break;
    case reg(JAL_SLICE_GATE_LO):
        gate_ = set_lo(gate_, value);
        break;
    case reg(JAL_SLICE_GATE_HI):
        gate_ = set_hi(gate_, value);
        break;
    default:
        break;
    }
}

}  // namespace jal::emu
