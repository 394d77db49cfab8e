#include "firmware/slices/slice_manager.hpp"

#include "firmware/hal/hal.hpp"
#include "firmware/sys/watchdog.hpp"
#include "firmware/util/mask64.hpp"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

namespace jal::fw::slices {

using util::popcount64;

namespace {
void wait_until(std::uint64_t deadline_us)
{
    while (hal::now_us() < deadline_us) {}
}
}  // namespace

std::uint32_t SliceManager::release_resets()
{
    fused_ = util::read_mask64(JAL_SLICE_FUSE_LO, JAL_SLICE_FUSE_HI);
    released_ = 0;
    std::uint32_t in_group = 0;
    for (std::uint32_t s = 0; s < JAL_NUM_SLICES; ++s) {
        const std::uint64_t bit = std::uint64_t{1} << s;
        if (fused_ & bit) continue;  // fused slices are not powered: never released
        released_ |= bit;
        if (++in_group < JAL_SLICE_RESET_GROUP && s + 1 < JAL_NUM_SLICES) continue;
        util::write_mask64(JAL_SLICE_RESET_LO, JAL_SLICE_RESET_HI, released_);
        wait_until(hal::now_us() + JAL_SLICE_RESET_SETTLE_US);
        in_group = 0;
    }
    if (in_group) {  // the last group when the highest slices were fused
        util::write_mask64(JAL_SLICE_RESET_LO, JAL_SLICE_RESET_HI, released_);
        wait_until(hal::now_us() + JAL_SLICE_RESET_SETTLE_US);
    }
    return JAL_STATUS_OK;
}

std::uint32_t SliceManager::run_bist()
{
    bist_done_ = bist_pass_ = 0;
    const std::uint64_t t0 = hal::now_us();
    util::write_mask64(JAL_SLICE_BIST_START_LO, JAL_SLICE_BIST_START_HI, released_);
    const std::uint64_t deadline = t0 + kBistTimeoutUs;
    for (;;) {
        const std::uint64_t done =
            util::read_mask64(JAL_SLICE_BIST_DONE_LO, JAL_SLICE_BIST_DONE_HI) & released_;
        const std::uint64_t now = hal::now_us();
        // Record each slice's duration the first time it is seen done.
        for (std::uint64_t fresh = done & ~bist_done_; fresh; fresh &= fresh - 1) {
            const int s = std::countr_zero(fresh);
            const std::uint64_t us = now - t0;
            bist_us_[s] = static_cast<std::uint16_t>(us > 0xffff ? 0xffff : us);
        }
        bist_done_ = done;
        if (done == released_ || now >= deadline) break;
        sys::watchdog_feed();
    }
    bist_pass_ = util::read_mask64(JAL_SLICE_BIST_PASS_LO, JAL_SLICE_BIST_PASS_HI) & bist_done_;
    bist_failed_ = bist_done_ & ~bist_pass_;
    bist_timeout_ = released_ & ~bist_done_;
    for (std::uint64_t t = bist_timeout_; t; t &= t - 1) bist_us_[std::countr_zero(t)] = 0;
    // Slices that failed go back into reset: they would only burn leakage power.
    if (bist_failed_ | bist_timeout_) {
        released_ &= ~(bist_failed_ | bist_timeout_);
        util::write_mask64(JAL_SLICE_RESET_LO, JAL_SLICE_RESET_HI, released_);
    }
    return JAL_STATUS_OK;
}

std::uint32_t SliceManager::harvest()
{
    enabled_ = ~fused_ & bist_done_ & bist_pass_;
    return publish();
}

void SliceManager::disable_no_memory(std::uint32_t slice)
{
    const std::uint64_t bit = std::uint64_t{1} << slice;
    if (!(enabled_ & bit)) return;
    enabled_ &= ~bit;
    no_memory_ |= bit;
    released_ &= ~bit;
    util::write_mask64(JAL_SLICE_RESET_LO, JAL_SLICE_RESET_HI, released_);
}

std::uint32_t SliceManager::publish()
{
    util::write_mask64(JAL_SLICE_ENABLE_LO, JAL_SLICE_ENABLE_HI, enabled_);
    return enabled_count() < JAL_MIN_GOOD_SLICES ? JAL_STATUS_HW_FAILED : JAL_STATUS_OK;
}

std::uint32_t SliceManager::enabled_count() const
{
    return popcount64(enabled_);
}

std::uint32_t SliceManager::update_gating(std::uint64_t busy)
{
    const std::uint64_t gate = ~(enabled_ & busy);
    if (gate != gate_ || !gate_written_) {
        util::write_mask64(JAL_SLICE_GATE_LO, JAL_SLICE_GATE_HI, gate);
        gate_ = gate;
        gate_written_ = true;
    }
    return popcount64(enabled_ & ~gate_);
}

void SliceManager::build_map(jal_slice_map& map) const
{
    map = jal_slice_map{};
    map.num_slices = JAL_NUM_SLICES;
    map.num_enabled = enabled_count();
    map.fused_mask = fused_;
    map.failed_mask = bist_failed_ | bist_timeout_;
    map.enabled_mask = enabled_;
    for (auto& l : map.logical_to_physical) l = 0xff;
    std::uint8_t next_logical = 0;
    for (std::uint32_t s = 0; s < JAL_NUM_SLICES; ++s) {
        const std::uint64_t bit = std::uint64_t{1} << s;
        jal_slice_info& info = map.slices[s];
        info.logical_id = 0xff;
        if (fused_ & bit)
            info.state = JAL_SLICE_FUSED;
        else if (bist_timeout_ & bit)
            info.state = JAL_SLICE_BIST_TIMEOUT;
        else if (bist_failed_ & bist_done_ & bit)
            info.state = JAL_SLICE_FAILED_BIST;
        else if (no_memory_ & bit)
            info.state = JAL_SLICE_NO_MEMORY;
        else if (enabled_ & bit) {
            info.state = JAL_SLICE_ENABLED;
            info.logical_id = next_logical;
            map.logical_to_physical[next_logical++] = static_cast<std::uint8_t>(s);
        } else
            info.state = JAL_SLICE_FAILED_BIST;  // not yet tested (boot stopped early)
        info.channels_ok = channels_ok_[s];
        info.power_gated = (enabled_ & bit) && (gate_ & bit) ? 1 : 0;
        info.bist_us = bist_us_[s];
    }
}

}  // namespace jal::fw::slices
