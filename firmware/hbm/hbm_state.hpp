// What training learned, kept compactly (about 65 KiB for 192 channels) so the 576-byte
// channel reports can be rebuilt one at a time on request instead of held in SRAM.
#pragma once

#include <array>
#include <cstdint>

#include "jal/hw/admin.h"
#include "jal/hw/chip.h"
#include "jal/hw/events.h"

namespace jal::fw::hbm {

// Why a channel failed (event log args, console): the contract's jal_hbm_fail_reason.
enum FailReason : std::uint8_t {
    kFailNone = JAL_HBM_FAIL_NONE,
    kFailTooManyDeadLanes = JAL_HBM_FAIL_TOO_MANY_DEAD_LANES,
    kFailNoWriteLevel = JAL_HBM_FAIL_NO_WRITE_LEVEL,
    kFailNoReadEye = JAL_HBM_FAIL_NO_READ_EYE,
    kFailReadRecheck = JAL_HBM_FAIL_READ_RECHECK,
    kFailNoWriteEye = JAL_HBM_FAIL_NO_WRITE_EYE,
    kFailWriteRecheck = JAL_HBM_FAIL_WRITE_RECHECK,
    kFailMemtest = JAL_HBM_FAIL_MEMTEST,
    kFailStack = JAL_HBM_FAIL_STACK,
};

struct LaneTrained {
    std::uint8_t rd_delay = 0, rd_width = 0, wr_delay = 0, wr_width = 0;
    std::uint8_t flags = 0;  // JAL_HBM_LANE_*
};

struct ChannelTrained {
    std::uint8_t status = JAL_HBM_CH_UNTRAINED;
    std::uint8_t vref = 0;
    std::uint8_t wrlvl = 0;
    std::uint8_t dead_lanes = 0;
    std::uint8_t fail_reason = kFailNone;
    std::array<std::uint8_t, JAL_HBM_SPARE_LANES> repair{0xff, 0xff, 0xff, 0xff};
    std::uint32_t memtest_errors = 0;
    std::uint32_t training_us = 0;
    std::array<LaneTrained, JAL_HBM_LANES> lanes{};

    bool usable() const { return status == JAL_HBM_CH_OK || status == JAL_HBM_CH_REPAIRED; }
};

struct HbmState {
    std::array<ChannelTrained, JAL_HBM_CHANNELS> channels{};
    // Pages of each channel taken out of service this boot (after uncorrectable errors; the
    // retirement policy comes with ECC fault handling). GET_HBM_REPORT and telemetry.
    std::array<std::uint16_t, JAL_HBM_CHANNELS> retired_pages{};
    std::uint32_t retired_total = 0;
    void count_retired(std::uint32_t channel)
    {
        if (channel >= JAL_HBM_CHANNELS) return;
        ++retired_pages[channel];
        ++retired_total;
    }
    std::uint32_t stacks_failed_mask = 0;

    std::uint32_t count(std::uint8_t status) const;
    std::uint32_t usable_count() const { return count(JAL_HBM_CH_OK) + count(JAL_HBM_CH_REPAIRED); }
    std::uint32_t usable_in_slice(std::uint32_t slice) const;
    void build_report(std::uint32_t channel, jal_hbm_channel_report& out) const;
};

}  // namespace jal::fw::hbm
