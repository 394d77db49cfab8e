// The 64 compute slices as the management core sees them: fuses, reset, self-test,
// the published enable map, power gating and activity.
#pragma once

#include <cstdint>

namespace jalemu {

class Slices {
public:
    // fused: fused off at manufacturing; failing: fail self-test at boot.
    Slices(std::uint64_t seed, std::uint64_t fused, std::uint64_t failing);

    std::uint32_t read(std::uint32_t offset, std::uint64_t now_us) const;
    void write(std::uint32_t offset, std::uint32_t value, std::uint64_t now_us);
    void reset();

    std::uint64_t enabled() const { return enable_; }
    std::uint64_t gated() const { return gate_; }
    std::uint64_t out_of_reset() const { return reset_released_; }
    // Slices running work; with a synthetic load every enabled slice is busy.
    std::uint64_t busy() const { return synthetic_busy_ ? enable_ : 0; }
    void set_synthetic_busy(bool on) { synthetic_busy_ = on; }
    std::uint32_t powered_count() const;

private:
    std::uint64_t done_mask(std::uint64_t now_us) const;

    std::uint64_t fused_, failing_;
    std::uint64_t bist_us_[64];
    std::uint64_t bist_start_us_[64];
    std::uint64_t bist_started_ = 0;
    std::uint64_t reset_released_ = 0, enable_ = 0, gate_ = 0;
    bool synthetic_busy_ = false;
};

}  // namespace jalemu
