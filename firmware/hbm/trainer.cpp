#include "hbm/trainer.hpp"

#include <bit>

#include "hal/hal.hpp"
#include "host/event_codes.hpp"
#include "jal/hw/mgmt.h"
#include "sys/watchdog.hpp"

namespace jalfw::hbm {

namespace {

LaneSet read_result()
{
    LaneSet s;
    const std::uint32_t r0 = hal::read32(JAL_HBM_RESULT0);
    const std::uint32_t r1 = hal::read32(JAL_HBM_RESULT1);
    const std::uint32_t r2 = hal::read32(JAL_HBM_RESULT2);
    s.dq = std::uint64_t{r1} << 32 | r0;
    s.spares = static_cast<std::uint8_t>(r2 & 0xf);
    return s;
}

void command(std::uint32_t cmd) { hal::write32(JAL_HBM_CMD, cmd); }

}  // namespace

void Trainer::fail(std::uint32_t ch, FailReason reason)
{
    ChannelTrained& c = state_.channels[ch];
    c.status = JAL_HBM_CH_FAILED;
    c.fail_reason = reason;
    hal::write32(JAL_HBM_CH_ENABLE, 0);
    journal_.event(JAL_SRC_HBM, JAL_SEV_WARN, host::kEvHbmChannelFailed, "hbm channel failed",
                   {ch, c.dead_lanes, reason});
}

void Trainer::sweep(std::uint32_t delay_reg, std::uint32_t cmd)
{
    pass_.fill(0);
    hal::write32(JAL_HBM_LANE_SEL, JAL_HBM_LANE_ALL);
    for (std::uint32_t tap = 0; tap < kTaps; ++tap) {
        hal::write32(delay_reg, tap);
        command(cmd);
        const LaneSet r = read_result();
        for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l)
            if (r.has(l)) pass_[l] |= std::uint64_t{1} << tap;
    }
}

std::uint32_t Trainer::min_width(const LaneSet& in_use) const
{
    std::uint32_t m = kTaps;
    for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l)
        if (in_use.has(l)) {
            const std::uint32_t w = find_window(pass_[l]).width;
            if (w < m) m = w;
        }
    return m;
}

bool Trainer::all_pass(std::uint32_t cmd, const LaneSet& in_use) const
{
    command(cmd);
    const LaneSet r = read_result();
    return (r.dq & in_use.dq) == in_use.dq && (r.spares & in_use.spares) == in_use.spares;
}

// Sweeps WRLVL_DELAY upwards and takes the first tap where the sampled clock goes 0 -> 1
// and stays 1 on the next tap. Writes pass only within four taps of that point, so the
// channel is left one tap inside it.
bool Trainer::write_level(ChannelTrained& c)
{
    std::uint32_t prev = 0;
    for (std::uint32_t tap = 0; tap + 1 < kTaps; ++tap) {
        hal::write32(JAL_HBM_WRLVL_DELAY, tap);
        command(JAL_HBM_CMD_WRLVL);
        const std::uint32_t bit = hal::read32(JAL_HBM_RESULT0) & 1;
        if (prev == 0 && bit == 1) {
            hal::write32(JAL_HBM_WRLVL_DELAY, tap + 1);
            command(JAL_HBM_CMD_WRLVL);
            if (hal::read32(JAL_HBM_RESULT0) & 1) {
                c.wrlvl = static_cast<std::uint8_t>(tap + 1);
                hal::write32(JAL_HBM_WRLVL_DELAY, c.wrlvl);
                return true;
            }
        }
        prev = bit;
    }
    return false;
}

void Trainer::train_channel(std::uint32_t ch)
{
    ChannelTrained& c = state_.channels[ch];
    c = ChannelTrained{};
    const std::uint64_t t0 = hal::now_us();
    hal::write32(JAL_HBM_CH_SEL, ch);
    command(JAL_HBM_CMD_RESET);
    const FailReason reason = train_selected(ch, c);
    c.training_us = static_cast<std::uint32_t>(hal::now_us() - t0);
    if (reason != kFailNone) fail(ch, reason);
}

FailReason Trainer::train_selected(std::uint32_t ch, ChannelTrained& c)
{
    // Connectivity; dead DQ lanes move to working spares.
    command(JAL_HBM_CMD_CONNECT);
    const LaneSet alive = read_result();
    const std::uint64_t dead_dq = ~alive.dq;
    const unsigned working_spares = alive.spares & 0xfu;
    c.dead_lanes = static_cast<std::uint8_t>(std::popcount(dead_dq) + std::popcount(~working_spares & 0xfu));
    for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) {
        LaneTrained& lt = c.lanes[l];
        if (!alive.has(l)) lt.flags |= JAL_HBM_LANE_DEAD;
        if (l >= JAL_HBM_DQ_LANES) lt.flags |= JAL_HBM_LANE_SPARE;
    }
    if (std::popcount(dead_dq) > std::popcount(working_spares)) return kFailTooManyDeadLanes;
    LaneSet in_use{alive.dq, 0};
    std::uint32_t spare = 0;
    for (std::uint64_t d = dead_dq; d; d &= d - 1) {
        const auto lane = static_cast<std::uint32_t>(std::countr_zero(d));
        while (!((working_spares >> spare) & 1)) ++spare;
        hal::write32(JAL_HBM_REMAP, spare << 8 | lane);
        c.repair[spare] = static_cast<std::uint8_t>(lane);
        in_use.spares |= static_cast<std::uint8_t>(1u << spare);
        ++spare;
    }
    for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l)
        if (in_use.has(l)) c.lanes[l].flags |= JAL_HBM_LANE_IN_USE;

    if (!write_level(c)) return kFailNoWriteLevel;

    // Vref: coarse sweep, then one step either side of the best; score = the narrowest
    // read eye over the lanes carrying data.
    std::uint32_t best_vref = 0, best_score = 0;
    bool have_best = false;
    auto try_vref = [&](std::uint32_t v) {
        hal::write32(JAL_HBM_VREF, v);
        sweep(JAL_HBM_RD_DELAY, JAL_HBM_CMD_READ_TEST);
        const std::uint32_t score = min_width(in_use);
        if (!have_best || score > best_score) {
            best_vref = v;
            best_score = score;
            have_best = true;
        }
    };
    for (std::uint32_t v = 0; v < JAL_HBM_VREF_STEPS; v += kVrefCoarseStride) try_vref(v);
    sys::watchdog_feed();
    const std::uint32_t coarse = best_vref;
    if (coarse > 0) try_vref(coarse - 1);
    if (coarse + 1 < JAL_HBM_VREF_STEPS) try_vref(coarse + 1);
    c.vref = static_cast<std::uint8_t>(best_vref);
    hal::write32(JAL_HBM_VREF, best_vref);

    // Read delays at the chosen Vref, then write delays (write leveling already holds
    // WRLVL_DELAY inside its window); each lane centred on its widest window, rechecked.
    if (!centre_lanes(c, in_use, false)) return kFailNoReadEye;
    if (!all_pass(JAL_HBM_CMD_READ_TEST, in_use)) return kFailReadRecheck;
    if (!centre_lanes(c, in_use, true)) return kFailNoWriteEye;
    if (!all_pass(JAL_HBM_CMD_WRITE_TEST, in_use)) return kFailWriteRecheck;

    command(JAL_HBM_CMD_MEMTEST);
    c.memtest_errors = hal::read32(JAL_HBM_ERRORS);
    if (c.memtest_errors != 0) return kFailMemtest;

    hal::write32(JAL_HBM_CH_ENABLE, 1);
    const bool repaired = in_use.spares != 0;
    c.status = repaired ? JAL_HBM_CH_REPAIRED : JAL_HBM_CH_OK;
    if (repaired)
        journal_.event(JAL_SRC_HBM, JAL_SEV_INFO, host::kEvHbmChannelRepaired, "hbm channel repaired",
                       {ch, static_cast<std::uint32_t>(std::popcount(static_cast<unsigned>(in_use.spares)))});
    return kFailNone;
}

bool Trainer::centre_lanes(ChannelTrained& c, const LaneSet& in_use, bool write)
{
    const std::uint32_t delay_reg = write ? JAL_HBM_WR_DELAY : JAL_HBM_RD_DELAY;
    sweep(delay_reg, write ? JAL_HBM_CMD_WRITE_TEST : JAL_HBM_CMD_READ_TEST);
    bool ok = true;
    for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) {
        const Window w = find_window(pass_[l]);
        LaneTrained& lt = c.lanes[l];
        (write ? lt.wr_width : lt.rd_width) = w.width;
        (write ? lt.wr_delay : lt.rd_delay) = w.centre();
        if (!w.width && !(lt.flags & JAL_HBM_LANE_DEAD)) lt.flags |= JAL_HBM_LANE_NOEYE;
        if (!w.width && in_use.has(l)) ok = false;
        hal::write32(JAL_HBM_LANE_SEL, l);
        hal::write32(delay_reg, w.centre());
    }
    return ok;
}

void Trainer::apply_stack_rule()
{
    state_.stacks_failed_mask = 0;
    for (std::uint32_t s = 0; s < JAL_HBM_STACKS; ++s) {
        const std::uint32_t first = s * JAL_HBM_CHANNELS_PER_STACK;
        std::uint32_t failed = 0;
        for (std::uint32_t k = 0; k < JAL_HBM_CHANNELS_PER_STACK; ++k)
            failed += state_.channels[first + k].status == JAL_HBM_CH_FAILED;
        if (failed <= JAL_HBM_FAILED_CHANNELS_PER_STACK_MAX) continue;
        state_.stacks_failed_mask |= 1u << s;
        for (std::uint32_t k = 0; k < JAL_HBM_CHANNELS_PER_STACK; ++k) {
            ChannelTrained& c = state_.channels[first + k];
            if (!c.usable()) continue;
            hal::write32(JAL_HBM_CH_SEL, first + k);
            hal::write32(JAL_HBM_CH_ENABLE, 0);
            c.status = JAL_HBM_CH_FAILED;
            c.fail_reason = kFailStack;
        }
        journal_.event(JAL_SRC_HBM, JAL_SEV_ERROR, host::kEvHbmStackFailed, "hbm stack failed", {s, failed});
    }
}

void Trainer::train_all(std::uint64_t slice_mask)
{
    for (std::uint32_t ch = 0; ch < JAL_HBM_CHANNELS; ++ch) {
        if (!((slice_mask >> jal_slice_of_channel(ch)) & 1)) {
            state_.channels[ch] = ChannelTrained{};
            continue;
        }
        train_channel(ch);
        sys::watchdog_feed();
    }
    apply_stack_rule();
    journal_.event(JAL_SRC_HBM, JAL_SEV_INFO, host::kEvHbmTrained, "hbm trained",
                   {state_.count(JAL_HBM_CH_OK), state_.count(JAL_HBM_CH_REPAIRED), state_.count(JAL_HBM_CH_FAILED),
                    state_.count(JAL_HBM_CH_UNTRAINED)});
}

}  // namespace jalfw::hbm
