// HBM PHY training through the JAL_HBM_* registers: connectivity and lane repair, write
// leveling, a Vref sweep scored by read-delay sweeps, read and write delay sweeps with
// centring and recheck, memtest, then the channel goes into service. Only register
// results are trusted.
//
// The PHY has one training engine per HBM stack: a command returns at once and the
// channel's results are ready when its stack's engine is done. The trainer therefore
// trains a group of channels together, one per stack, interleaving them: in every round
// of a sweep it visits each channel of the group in turn, collects the result of that
// channel's previous command and issues its next one, so the six engines work while the
// core attends to the others.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "firmware/hal/hal.hpp"
#include "firmware/hbm/eye.hpp"
#include "firmware/hbm/hbm_state.hpp"
#include "firmware/host/journal.hpp"
#include "jal/hw/mgmt.h"

namespace jal::fw::hbm {

// Lanes as a 68-bit set: 64 DQ lanes plus 4 spares.
struct LaneSet {
    std::uint64_t dq = 0;
    std::uint8_t spares = 0;
    bool has(std::uint32_t lane) const
    {
        return lane < JAL_HBM_DQ_LANES ? (dq >> lane) & 1
                                       : (spares >> (lane - JAL_HBM_DQ_LANES)) & 1;
    }
};

class Trainer {
public:
    Trainer(HbmState& state, host::Journal& journal) : state_(state), journal_(journal) {}

    // Trains the channels of the slices in slice_mask (others stay UNTRAINED and out of
    // service), one channel per stack at a time, then fails stacks with too many failed
    // channels.
    void train_all(std::uint64_t slice_mask);
    // Trains one channel on its own; the result is in state().channels[ch].
    void train_channel(std::uint32_t ch);
    // Trains up to kMaxGroup channels together (best: one per stack; channels of one stack
    // still work, their commands just queue on that stack's engine).
    void train_group(std::span<const std::uint32_t> channels);
    // Takes every channel of a stack with too many failures out of service.
    void apply_stack_rule();

    static constexpr std::uint32_t kMaxGroup = JAL_HBM_STACKS;
    // Vref: a coarse sweep every kVrefCoarseStride steps, then the best point's neighbours
    // at distance 4, then 2, then 1 (a binary refinement). The eyes narrow by one tap per
    // side every two steps away from the optimum, widths fall off steadily on both sides,
    // and the total width breaks ties between steps of equal narrowest eye, so each
    // refinement keeps the optimum within reach and the last one ends on a step with the
    // widest eyes (the optimum or its neighbour, whose eyes are as wide).
    static constexpr std::uint32_t kVrefCoarseStride = 8;
    static constexpr std::uint32_t kVrefSweeps = JAL_HBM_VREF_STEPS / kVrefCoarseStride + 6;

private:
    // One channel of the group being trained.
    struct Slot {
        std::uint32_t ch = 0;
        ChannelTrained* c = nullptr;
        LaneSet in_use;
        FailReason reason = kFailNone;  // set when the channel drops out of the group
        std::uint64_t t0_us = 0, t_end_us = 0;
        // Vref search: the best score so far (narrowest eye over in-use lanes, then the
        // sum of their widths as the tie-break) and this sweep's candidate.
        std::uint32_t best_vref = 0, best_min = 0, best_sum = 0, vref_try = 0;
        bool have_best = false;
        // Sweep scratch: the result words of each tap (bit = lane) as they arrive, then,
        // transposed, each lane's pass mask (bit t = passed at tap t).
        std::array<std::uint32_t, kTaps> rows_lo{}, rows_hi{};
        std::array<std::uint8_t, kTaps> rows_spares{};
        std::array<std::uint64_t, JAL_HBM_LANES> pass{};
    };
    using Mask = std::uint32_t;  // bit i: slot i takes part

    Mask active() const;
    [[gnu::always_inline]] void select(std::uint32_t ch)
    {
        if (ch == selected_) return;
        hal::write32(JAL_HBM_CH_SEL, ch);
        selected_ = ch;
    }
    void drop(Slot& s, FailReason reason);
    // The interleaved sweep: every slot in `m` sets `delay_reg` (on all lanes) to each tap in
    // turn and runs `cmd`, leaving each lane's pass mask in its slot's `pass`. Spares are
    // recorded when `spares` is set or when the slot has a spare carrying data.
    void sweep(Mask m, std::uint32_t delay_reg, std::uint32_t cmd, bool spares);
    // The phases of train_group, each over the slots still in training.
    void connect_and_repair();
    void write_level();
    void train_vref();
    void score_vref(Slot& s);
    void centre(bool write);
    void recheck(std::uint32_t cmd, FailReason reason);
    void memtest();
    void finish(Slot& s);

    HbmState& state_;
    host::Journal& journal_;
    std::array<Slot, kMaxGroup> slots_{};
    std::uint32_t n_ = 0;
    std::uint32_t selected_ = ~0u;  // the CH_SEL value last written, to skip rewriting it
};

}  // namespace jal::fw::hbm
