// Compute slices: reset release, self-test, harvesting and the published enable map.
// Harvested slices (fused, failed or silent self-test, or left without memory) vanish
// from the host's view: logical ids are dense over the enabled physical slices.
#pragma once

#include <array>
#include <cstdint>

#include "jal/hw/admin.h"
#include "jal/hw/chip.h"

namespace jal::fw::slices {

inline constexpr std::uint64_t kAllSlices = ~std::uint64_t{0};
inline constexpr std::uint32_t kBistTimeoutUs = 10 * 400;  // 10x JAL_SLICE_BIST_US

class SliceManager {
public:
    // Releases the resets of all non-fused slices, JAL_SLICE_RESET_GROUP at a time, with
    // JAL_SLICE_RESET_SETTLE_US of modelled time between groups (inrush current).
    [[nodiscard]] std::uint32_t release_resets();
    // Starts self-test on the released slices and waits (bounded) for it to finish.
    [[nodiscard]] std::uint32_t run_bist();
    // enabled = not fused & done & passed; publishes the map. JAL_STATUS_HW_FAILED when
    // fewer than JAL_MIN_GOOD_SLICES remain (product rule).
    [[nodiscard]] std::uint32_t harvest();
    // Disables a slice whose HBM channels all failed (JAL_SLICE_NO_MEMORY).
    void disable_no_memory(std::uint32_t slice);
    // Re-publishes the enable map and re-checks the product rule.
    [[nodiscard]] std::uint32_t publish();
    void set_channels_ok(std::uint32_t slice, std::uint8_t n) { channels_ok_[slice] = n; }

    // Power gating: enabled slices that are not busy are gated; everything not enabled
    // stays gated. Writes GATE only when it changes. Returns the enabled ungated count.
    std::uint32_t update_gating(std::uint64_t busy);

    std::uint64_t fused() const { return fused_; }
    std::uint64_t enabled() const { return enabled_; }
    std::uint64_t bist_failed() const { return bist_failed_; }
    std::uint64_t bist_timeout() const { return bist_timeout_; }
    std::uint64_t no_memory() const { return no_memory_; }
    std::uint64_t gated() const { return gate_; }
    std::uint32_t enabled_count() const;
    bool degraded() const { return enabled_ != kAllSlices; }

    void build_map(jal_slice_map& map) const;

private:
    std::uint64_t fused_ = 0;
    std::uint64_t released_ = 0;
    std::uint64_t bist_done_ = 0;
    std::uint64_t bist_pass_ = 0;
    std::uint64_t bist_failed_ = 0;   // done but failed
    std::uint64_t bist_timeout_ = 0;  // released but never done
    std::uint64_t no_memory_ = 0;
    std::uint64_t enabled_ = 0;
    std::uint64_t gate_ = 0;
    bool gate_written_ = false;
    std::array<std::uint16_t, JAL_NUM_SLICES> bist_us_{};
    std::array<std::uint8_t, JAL_NUM_SLICES> channels_ok_{};
};

}  // namespace jal::fw::slices
