// The HBM PHY model behind the management core's HBM registers (jal/hw/mgmt.h).
// Each physical lane has a hidden read and write eye drawn from the seed; the firmware
// finds them only through pattern tests, so a wrong training algorithm produces failing
// lanes. The hidden truth is exposed for tests (never to firmware).
//
// Timing: each HBM stack has one training engine. A command written to a channel acts on
// that channel's settings at once, but occupies its stack's engine until
// max(now, engine busy until) + the command's cost; reading the channel's RESULT*/ERRORS
// waits for the engine (ready_ns). Channels of different stacks therefore train in
// parallel, channels of one stack one after the other.
#pragma once

#include "jal/hw/chip.h"

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace jal::emu {

struct Eye {
    int lo = 0, hi = -1;  // passing taps, inclusive; empty when hi < lo
    bool contains(int tap) const { return tap >= lo && tap <= hi; }
    bool empty() const { return hi < lo; }
};

class HbmPhy {
public:
    // dead_lanes: (channel, physical lane 0..JAL_HBM_LANES-1) pairs with no connectivity.
    HbmPhy(std::uint64_t seed,
           const std::vector<std::pair<std::uint32_t, std::uint32_t>>& dead_lanes);

    // Register access at an offset inside the HBM block, at modelled time now_ns. A
    // command (CMD) queues on the selected channel's stack engine and returns at once.
    std::uint32_t read(std::uint32_t offset) const;
    void write(std::uint32_t offset, std::uint32_t value, std::uint64_t now_ns);
    // Modelled time at which a read of `offset` may return: for the selected channel's
    // RESULT0-2 and ERRORS the end of its stack engine's queued work, else 0.
    std::uint64_t ready_ns(std::uint32_t offset) const;
    // ECC errors seen on a channel (JAL_HBM_ECC_*): counted since power-on, never reset;
    // fault injection adds to them.
    void count_ecc(std::uint32_t ch, std::uint32_t corrected, std::uint32_t uncorrected);
    // Over every channel: which 0 = corrected, 1 = uncorrected (JAL_PWR_ECC_*).
    std::uint32_t ecc_total(std::uint32_t which) const;
    // A lane loses connectivity for good (fault injection): the channel keeps its training
    // until the firmware retrains it, and a dead lane never comes back, not even at reset.
    void kill_lane(std::uint32_t ch, std::uint32_t lane);
    // When stack `stack`'s engine finishes the commands queued so far.
    std::uint64_t engine_busy_until_ns(std::uint32_t stack) const { return busy_until_ns_[stack]; }
    // Cost of command `cmd` in ns (0 for an unknown command).
    static std::uint64_t command_ns(std::uint32_t cmd);

    // Power-on / chip reset: every channel untrained and out of service.
    void reset();

    bool channel_enabled(std::uint32_t ch) const { return state_[ch].enabled; }
    std::uint32_t selected_channel() const { return ch_sel_; }

    // Hidden truth, for tests and the console.
    Eye read_eye(std::uint32_t ch, std::uint32_t lane, std::uint32_t vref) const;
    Eye write_eye(std::uint32_t ch, std::uint32_t lane, std::uint32_t vref) const;
    bool lane_dead(std::uint32_t ch, std::uint32_t lane) const
    {
        return truth_[ch].lanes[lane].dead;
    }
    std::uint32_t vref_opt(std::uint32_t ch) const { return truth_[ch].vref_opt; }
    std::uint32_t wrlvl_point(std::uint32_t ch) const { return truth_[ch].wrlvl_point; }
    std::uint32_t read_delay(std::uint32_t ch, std::uint32_t lane) const
    {
        return state_[ch].rd[lane];
    }
    std::uint32_t write_delay(std::uint32_t ch, std::uint32_t lane) const
    {
        return state_[ch].wr[lane];
    }
    std::uint32_t vref(std::uint32_t ch) const { return state_[ch].vref; }
    // Physical lane carrying DQ lane `dq` (a spare when remapped).
    std::uint32_t carrier(std::uint32_t ch, std::uint32_t dq) const;

private:
    struct LaneTruth {
        std::uint8_t rd_center, rd_half, wr_center, wr_half;
        bool dead;
    };
    struct ChannelTruth {
        std::uint8_t vref_opt, wrlvl_point;
        std::array<LaneTruth, JAL_HBM_LANES> lanes;
    };
    struct ChannelState {
        std::array<std::uint8_t, JAL_HBM_LANES> rd{}, wr{};
        std::uint8_t vref = 0, wrlvl = 0;
        std::array<std::uint8_t, JAL_HBM_SPARE_LANES> remap{0xff, 0xff, 0xff, 0xff};
        bool enabled = false;
        std::uint32_t tests = 0;                // pattern tests run; varies the edge flicker
        std::array<std::uint32_t, 3> result{};  // RESULT0-2 of the last command
        std::uint32_t errors = 0;               // ERRORS of the last MEMTEST
    };

    void run(std::uint32_t cmd);
    void set_result(ChannelState& s, const std::array<bool, JAL_HBM_LANES>& pass);
    bool pattern_pass(std::uint32_t ch, std::uint32_t lane, bool write_test) const;
    bool strictly_inside(std::uint32_t ch, std::uint32_t lane) const;

    std::uint64_t seed_;
    std::array<ChannelTruth, JAL_HBM_CHANNELS> truth_;
    std::array<ChannelState, JAL_HBM_CHANNELS> state_;
    std::uint32_t ch_sel_ = 0, lane_sel_ = 0;
    // Busy-until of each stack's engine; kept across resets (time never goes back).
    std::array<std::uint64_t, JAL_HBM_STACKS> busy_until_ns_{};
    std::array<std::array<std::uint32_t, 2>, JAL_HBM_CHANNELS> ecc_{};  // corrected, uncorrected
};

}  // namespace jal::emu
