// The 64 compute slices as the management core sees them: fuses, reset, self-test,
// the published enable map, power gating and activity.
#pragma once

#include <atomic>
#include <cstdint>

namespace jal::emu {

class Slices {
public:
    // fused: fused off at manufacturing; failing: fail self-test at boot.
    Slices(std::uint64_t seed, std::uint64_t fused, std::uint64_t failing);

    std::uint32_t read(std::uint32_t offset, std::uint64_t now_us) const;
    void write(std::uint32_t offset, std::uint32_t value, std::uint64_t now_us);
    void reset();

    // Read by the command processor's dispatches too, hence atomic.
    std::uint64_t enabled() const { return enable_.load(std::memory_order_relaxed); }
    std::uint64_t gated() const { return gate_; }
    std::uint64_t out_of_reset() const { return reset_released_; }
    // Slices running work; with a synthetic load every enabled slice is busy.
    // Slices running work: every enabled slice with a synthetic load, else the slices a
    // kernel dispatch holds (set by the command processor).
    std::uint64_t busy() const
    {
        return synthetic_busy_ ? enabled() : dispatch_busy_.load(std::memory_order_relaxed);
    }
    void set_dispatch_busy(std::uint64_t mask)
    {
        dispatch_busy_.store(mask, std::memory_order_relaxed);
    }
    void set_synthetic_busy(bool on) { synthetic_busy_ = on; }
    std::uint32_t powered_count() const;

    // Injected slice faults (JAL_DEBUG_FAULT_SLICE_FAIL / _HANG) on physical slices, taken by
    // the dispatch that runs on the slice next (or is running on it). Any thread.
    enum class Fault : std::uint32_t { none = 0, fail = 1, hang = 2 };
    void arm_fault(std::uint32_t physical, Fault f);
    // The fault armed on the lowest slice of `physical_mask` that has one, now disarmed;
    // `physical` names that slice.
    Fault take_fault(std::uint64_t physical_mask, std::uint32_t& physical);

private:
    std::uint64_t done_mask(std::uint64_t now_us) const;

    std::uint64_t fused_, failing_;
    std::uint64_t bist_us_[64];
    std::uint64_t bist_start_us_[64];
    std::uint64_t bist_started_ = 0;
    std::uint64_t reset_released_ = 0, gate_ = 0;
    std::atomic<std::uint64_t> enable_{0}, dispatch_busy_{0};
    std::atomic<std::uint64_t> fail_armed_{0}, hang_armed_{0};
    bool synthetic_busy_ = false;
};

}  // namespace jal::emu
