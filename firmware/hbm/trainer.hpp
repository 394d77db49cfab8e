// HBM PHY training, one channel at a time, through the JAL_HBM_* registers: connectivity
// and lane repair, write leveling, Vref and read-delay sweeps, write-delay sweep,
// memtest, then the channel goes into service. Only register results are trusted.
#pragma once

#include <array>
#include <cstdint>

#include "hbm/eye.hpp"
#include "hbm/hbm_state.hpp"
#include "host/journal.hpp"

namespace jalfw::hbm {

// Lanes as a 68-bit set: 64 DQ lanes plus 4 spares.
struct LaneSet {
    std::uint64_t dq = 0;
    std::uint8_t spares = 0;
    bool has(std::uint32_t lane) const
    {
        return lane < JAL_HBM_DQ_LANES ? (dq >> lane) & 1 : (spares >> (lane - JAL_HBM_DQ_LANES)) & 1;
    }
};

class Trainer {
public:
    Trainer(HbmState& state, host::Journal& journal) : state_(state), journal_(journal) {}

    // Trains the channels of the slices in slice_mask (others stay UNTRAINED and out of
    // service), then fails stacks with too many failed channels.
    void train_all(std::uint64_t slice_mask);
    // Trains one channel; the result is in state().channels[ch].
    void train_channel(std::uint32_t ch);
    // Takes every channel of a stack with too many failures out of service.
    void apply_stack_rule();

    // Vref steps tried by the coarse sweep, then refined by one step each side.
    static constexpr std::uint32_t kVrefCoarseStride = 2;

private:
    void fail(std::uint32_t ch, FailReason reason);
    // Sets every lane's delay register (`delay_reg`) to each tap in turn and runs `cmd`,
    // filling pass_[lane] with one bit per tap.
    void sweep(std::uint32_t delay_reg, std::uint32_t cmd);
    // Narrowest widest-window over the in-use lanes after a sweep (0 if any has none).
    std::uint32_t min_width(const LaneSet& in_use) const;
    // Runs cmd at the current taps; true when every in-use lane passed.
    bool all_pass(std::uint32_t cmd, const LaneSet& in_use) const;
    bool write_level(ChannelTrained& c);
    // The training sequence on the selected channel; kFailNone when it went into service.
    FailReason train_selected(std::uint32_t ch, ChannelTrained& c);
    // Sweeps the read (or write) delay, centres every lane on its widest window and
    // records widths; false when a lane carrying data has no window.
    bool centre_lanes(ChannelTrained& c, const LaneSet& in_use, bool write);

    HbmState& state_;
    host::Journal& journal_;
    std::array<std::uint64_t, JAL_HBM_LANES> pass_{};  // sweep scratch
};

}  // namespace jalfw::hbm
