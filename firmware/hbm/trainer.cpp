#include "firmware/hbm/trainer.hpp"

#include <bit>

#include "firmware/hal/hal.hpp"
#include "firmware/hbm/bitmatrix.hpp"
#include "firmware/host/event_codes.hpp"
#include "firmware/sys/watchdog.hpp"
#include "jal/hw/mgmt.h"

namespace jal::fw::hbm {

namespace {

struct Result {
    std::uint32_t r0 = 0, r1 = 0, r2 = 0;
    LaneSet lanes() const
    {
        return {std::uint64_t{r1} << 32 | r0, static_cast<std::uint8_t>(r2 & 0xf)};
    }
};

// The selected channel's pass bits; RESULT2 (the spares) only when asked for, which saves
// an access per tap when no spare carries data.
[[gnu::always_inline]] inline Result read_result(bool spares)
{
    Result r;
    r.r0 = hal::read32(JAL_HBM_RESULT0);
    r.r1 = hal::read32(JAL_HBM_RESULT1);
    if (spares) r.r2 = hal::read32(JAL_HBM_RESULT2) & 0xf;
    return r;
}

[[gnu::always_inline]] inline void command(std::uint32_t cmd)
{
    hal::write32(JAL_HBM_CMD, cmd);
}

// Turns a sweep's per-tap result words into per-lane pass masks: four 32 x 32 transposes
// for the DQ lanes, and the few spare bits one by one.
void rows_to_lanes(std::array<std::uint32_t, kTaps>& lo, std::array<std::uint32_t, kTaps>& hi,
                   const std::array<std::uint8_t, kTaps>& spares,
                   std::array<std::uint64_t, JAL_HBM_LANES>& pass)
{
    transpose32(lo.data());
    transpose32(lo.data() + 32);
    transpose32(hi.data());
    transpose32(hi.data() + 32);
    for (std::uint32_t l = 0; l < 32; ++l) {
        pass[l] = std::uint64_t{lo[32 + l]} << 32 | lo[l];
        pass[32 + l] = std::uint64_t{hi[32 + l]} << 32 | hi[l];
    }
    for (std::uint32_t k = 0; k < JAL_HBM_SPARE_LANES; ++k) pass[JAL_HBM_DQ_LANES + k] = 0;
    for (std::uint32_t t = 0; t < kTaps; ++t)
        for (std::uint32_t w = spares[t]; w; w &= w - 1)
            pass[JAL_HBM_DQ_LANES + static_cast<std::uint32_t>(std::countr_zero(w))] |=
                std::uint64_t{1} << t;
}

template <typename F>
void for_each_lane(const LaneSet& s, F&& f)
{
    for (std::uint64_t d = s.dq; d; d &= d - 1) f(ctz64(d));
    for (std::uint32_t d = s.spares; d; d &= d - 1)
        f(JAL_HBM_DQ_LANES + static_cast<std::uint32_t>(std::countr_zero(d)));
}

template <typename F>
[[gnu::always_inline]] inline void for_each_slot(std::uint32_t mask, F&& f)
{
    for (std::uint32_t m = mask; m; m &= m - 1) f(static_cast<std::uint32_t>(std::countr_zero(m)));
}

}  // namespace

Trainer::Mask Trainer::active() const
{
    Mask m = 0;
    for (std::uint32_t i = 0; i < n_; ++i)
        if (slots_[i].reason == kFailNone) m |= 1u << i;
    return m;
}

void Trainer::drop(Slot& s, FailReason reason)
{
    s.reason = reason;
    s.t_end_us = hal::now_us();
}

void Trainer::sweep(Mask m, std::uint32_t delay_reg, std::uint32_t cmd, bool spares)
{
    hal::write32(JAL_HBM_LANE_SEL, JAL_HBM_LANE_ALL);
    // Round `tap`: each channel hands in the result of tap - 1 and starts tap. The other
    // channels' engines run meanwhile, so a read rarely has to wait.
    for (std::uint32_t tap = 0; tap <= kTaps; ++tap) {
        for_each_slot(m, [&](std::uint32_t i) {
            Slot& s = slots_[i];
            select(s.ch);
            if (tap > 0) {
                const Result r = read_result(spares || s.in_use.spares);
                s.rows_lo[tap - 1] = r.r0;
                s.rows_hi[tap - 1] = r.r1;
                s.rows_spares[tap - 1] = static_cast<std::uint8_t>(r.r2);
            }
            if (tap < kTaps) {
                hal::write32(delay_reg, tap);
                command(cmd);
            }
        });
    }
    for_each_slot(m, [&](std::uint32_t i) {
        Slot& s = slots_[i];
        rows_to_lanes(s.rows_lo, s.rows_hi, s.rows_spares, s.pass);
    });
}

// RESET and CONNECT on every channel, then collect: dead DQ lanes move to working spares.
void Trainer::connect_and_repair()
{
    const Mask m = active();
    for_each_slot(m, [&](std::uint32_t i) {
        select(slots_[i].ch);
        command(JAL_HBM_CMD_RESET);
        command(JAL_HBM_CMD_CONNECT);
    });
    for_each_slot(m, [&](std::uint32_t i) {
        Slot& s = slots_[i];
        ChannelTrained& c = *s.c;
        select(s.ch);
        const LaneSet alive = read_result(true).lanes();
        const std::uint64_t dead_dq = ~alive.dq;
        const unsigned working_spares = alive.spares & 0xfu;
        c.dead_lanes = static_cast<std::uint8_t>(std::popcount(dead_dq) +
                                                 std::popcount(~working_spares & 0xfu));
        for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) {
            LaneTrained& lt = c.lanes[l];
            if (!alive.has(l)) lt.flags |= JAL_HBM_LANE_DEAD;
            if (l >= JAL_HBM_DQ_LANES) lt.flags |= JAL_HBM_LANE_SPARE;
        }
        if (std::popcount(dead_dq) > std::popcount(working_spares))
            return drop(s, kFailTooManyDeadLanes);
        s.in_use = LaneSet{alive.dq, 0};
        std::uint32_t spare = 0;
        for (std::uint64_t d = dead_dq; d; d &= d - 1) {
            const auto lane = static_cast<std::uint32_t>(std::countr_zero(d));
            while (!((working_spares >> spare) & 1)) ++spare;
            hal::write32(JAL_HBM_REMAP, spare << 8 | lane);
            c.repair[spare] = static_cast<std::uint8_t>(lane);
            s.in_use.spares |= static_cast<std::uint8_t>(1u << spare);
            ++spare;
        }
        for_each_lane(s.in_use, [&](std::uint32_t l) { c.lanes[l].flags |= JAL_HBM_LANE_IN_USE; });
    });
}

// Sweeps WRLVL_DELAY upwards and takes the first tap where the sampled clock is 1 after a
// 0 (or at tap 0) and stays 1 on the next tap. Writes pass only within four taps of that
// point, so the channel is left one tap inside it. Interleaved like a sweep, but each
// channel stops as soon as it has its answer.
void Trainer::write_level()
{
    Mask searching = active();
    std::array<std::uint8_t, kMaxGroup>
        last{};  // bit 0: result at t, bit 1: at t - 1, bit 2: at t - 2
    for (std::uint32_t tap = 0; searching; ++tap) {
        for_each_slot(searching, [&](std::uint32_t i) {
            Slot& s = slots_[i];
            select(s.ch);
            if (tap > 0) {
                const std::uint32_t t = tap - 1;  // the tap whose result this is
                last[i] = static_cast<std::uint8_t>(
                    (last[i] << 1 | (hal::read32(JAL_HBM_RESULT0) & 1)) & 7);
                // A confirmed rise: 1 at t - 1 and t, and 0 at t - 2 (or t - 1 was tap 0).
                if (t >= 1 && (last[i] & 3) == 3 && (t == 1 || !(last[i] & 4))) {
                    s.c->wrlvl = static_cast<std::uint8_t>(t);
                    hal::write32(JAL_HBM_WRLVL_DELAY, t);
                    searching &= ~(1u << i);
                    return;
                }
            }
            if (tap >= kTaps) {
                drop(s, kFailNoWriteLevel);
                searching &= ~(1u << i);
                return;
            }
            hal::write32(JAL_HBM_WRLVL_DELAY, tap);
            command(JAL_HBM_CMD_WRLVL);
        });
    }
}

void Trainer::score_vref(Slot& s)
{
    std::uint32_t min = kTaps, sum = 0;
    for_each_lane(s.in_use, [&](std::uint32_t l) {
        const std::uint32_t w = find_window(s.pass[l]).width;
        if (w < min) min = w;
        sum += w;
    });
    if (!s.have_best || min > s.best_min || (min == s.best_min && sum > s.best_sum)) {
        s.best_vref = s.vref_try;
        s.best_min = min;
        s.best_sum = sum;
        s.have_best = true;
    }
}

// Vref: each candidate step is scored by a read-delay sweep (the narrowest in-use eye, then
// the total width); the best step wins. Coarse grid, then distances 4, 2 and 1 around the
// best so far.
void Trainer::train_vref()
{
    auto try_step = [&](auto candidate) {
        Mask m = 0;
        for_each_slot(active(), [&](std::uint32_t i) {
            Slot& s = slots_[i];
            const int v = candidate(s);
            if (v < 0 || v >= static_cast<int>(JAL_HBM_VREF_STEPS)) return;
            s.vref_try = static_cast<std::uint32_t>(v);
            select(s.ch);
            hal::write32(JAL_HBM_VREF, s.vref_try);
            m |= 1u << i;
        });
        if (!m) return;
        sweep(m, JAL_HBM_RD_DELAY, JAL_HBM_CMD_READ_TEST, false);
        for_each_slot(m, [&](std::uint32_t i) { score_vref(slots_[i]); });
    };
    for (std::uint32_t v = 0; v < JAL_HBM_VREF_STEPS; v += kVrefCoarseStride)
        try_step([v](const Slot&) { return static_cast<int>(v); });
    sys::watchdog_feed();
    for (const int d : {4, 2, 1}) {
        std::array<int, kMaxGroup> centre{};
        for (std::uint32_t i = 0; i < n_; ++i) centre[i] = static_cast<int>(slots_[i].best_vref);
        auto slot_index = [&](const Slot& s) {
            return static_cast<std::uint32_t>(&s - slots_.data());
        };
        try_step([&](const Slot& s) { return centre[slot_index(s)] - d; });
        try_step([&](const Slot& s) { return centre[slot_index(s)] + d; });
    }
    for_each_slot(active(), [&](std::uint32_t i) {
        Slot& s = slots_[i];
        s.c->vref = static_cast<std::uint8_t>(s.best_vref);
        select(s.ch);
        hal::write32(JAL_HBM_VREF, s.best_vref);
    });
}

// Sweeps the read (or write) delay on every lane, centres each lane on its widest window
// and records the widths; a channel whose data-carrying lane has no window drops out.
void Trainer::centre(bool write)
{
    const std::uint32_t delay_reg = write ? JAL_HBM_WR_DELAY : JAL_HBM_RD_DELAY;
    const Mask m = active();
    sweep(m, delay_reg, write ? JAL_HBM_CMD_WRITE_TEST : JAL_HBM_CMD_READ_TEST, true);
    for_each_slot(m, [&](std::uint32_t i) {
        Slot& s = slots_[i];
        select(s.ch);
        bool ok = true;
        for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) {
            const Window w = find_window(s.pass[l]);
            LaneTrained& lt = s.c->lanes[l];
            (write ? lt.wr_width : lt.rd_width) = w.width;
            (write ? lt.wr_delay : lt.rd_delay) = w.centre();
            if (!w.width && !(lt.flags & JAL_HBM_LANE_DEAD)) lt.flags |= JAL_HBM_LANE_NOEYE;
            if (!w.width && s.in_use.has(l)) ok = false;
            hal::write32(JAL_HBM_LANE_SEL, l);
            hal::write32(delay_reg, w.centre());
        }
        if (!ok) drop(s, write ? kFailNoWriteEye : kFailNoReadEye);
    });
}

// One more pattern test at the chosen taps: every lane carrying data must pass.
void Trainer::recheck(std::uint32_t cmd, FailReason reason)
{
    const Mask m = active();
    for_each_slot(m, [&](std::uint32_t i) {
        select(slots_[i].ch);
        command(cmd);
    });
    for_each_slot(m, [&](std::uint32_t i) {
        Slot& s = slots_[i];
        select(s.ch);
        const LaneSet r = read_result(s.in_use.spares != 0).lanes();
        if ((r.dq & s.in_use.dq) != s.in_use.dq || (r.spares & s.in_use.spares) != s.in_use.spares)
            drop(s, reason);
    });
}

void Trainer::memtest()
{
    const Mask m = active();
    for_each_slot(m, [&](std::uint32_t i) {
        select(slots_[i].ch);
        command(JAL_HBM_CMD_MEMTEST);
    });
    for_each_slot(m, [&](std::uint32_t i) {
        Slot& s = slots_[i];
        select(s.ch);
        s.c->memtest_errors = hal::read32(JAL_HBM_ERRORS);
        if (s.c->memtest_errors != 0) drop(s, kFailMemtest);
    });
}

void Trainer::finish(Slot& s)
{
    ChannelTrained& c = *s.c;
    if (s.reason == kFailNone) s.t_end_us = hal::now_us();
    c.training_us = static_cast<std::uint32_t>(s.t_end_us - s.t0_us);
    select(s.ch);
    if (s.reason != kFailNone) {
        c.status = JAL_HBM_CH_FAILED;
        c.fail_reason = s.reason;
        hal::write32(JAL_HBM_CH_ENABLE, 0);
        journal_.event(JAL_SRC_HBM, JAL_SEV_WARN, host::kEvHbmChannelFailed, "hbm channel failed",
                       {s.ch, c.dead_lanes, s.reason});
        return;
    }
    hal::write32(JAL_HBM_CH_ENABLE, 1);
    const bool repaired = s.in_use.spares != 0;
    c.status = repaired ? JAL_HBM_CH_REPAIRED : JAL_HBM_CH_OK;
    if (repaired)
        journal_.event(
            JAL_SRC_HBM, JAL_SEV_INFO, host::kEvHbmChannelRepaired, "hbm channel repaired",
            {s.ch,
             static_cast<std::uint32_t>(std::popcount(static_cast<unsigned>(s.in_use.spares)))});
}

void Trainer::train_group(std::span<const std::uint32_t> channels)
{
    n_ = 0;
    selected_ = ~0u;  // whatever CH_SEL holds, write it again before relying on it
    const std::uint64_t t0 = hal::now_us();
    for (const std::uint32_t ch : channels) {
        if (n_ == kMaxGroup || ch >= JAL_HBM_CHANNELS) break;
        // Field by field: the sweep scratch needs no clearing (every sweep writes it whole).
        Slot& s = slots_[n_++];
        s.ch = ch;
        s.c = &state_.channels[ch];
        s.in_use = LaneSet{};
        s.reason = kFailNone;
        s.t0_us = t0;
        s.t_end_us = 0;
        s.best_vref = s.best_min = s.best_sum = s.vref_try = 0;
        s.have_best = false;
        *s.c = ChannelTrained{};
    }
    connect_and_repair();
    write_level();
    train_vref();
    sys::watchdog_feed();
    // Read delays at the chosen Vref, then write delays (write leveling already holds
    // WRLVL_DELAY inside its window); each lane centred on its widest window, rechecked.
    centre(false);
    recheck(JAL_HBM_CMD_READ_TEST, kFailReadRecheck);
    centre(true);
    recheck(JAL_HBM_CMD_WRITE_TEST, kFailWriteRecheck);
    memtest();
    for (std::uint32_t i = 0; i < n_; ++i) finish(slots_[i]);
    sys::watchdog_feed();
}

void Trainer::train_channel(std::uint32_t ch)
{
    const std::uint32_t one[1] = {ch};
    train_group(one);
}

void Trainer::apply_stack_rule()
{
    state_.stacks_failed_mask = 0;
    selected_ = ~0u;
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
            select(first + k);
            hal::write32(JAL_HBM_CH_ENABLE, 0);
            c.status = JAL_HBM_CH_FAILED;
            c.fail_reason = kFailStack;
        }
        journal_.event(JAL_SRC_HBM, JAL_SEV_ERROR, host::kEvHbmStackFailed, "hbm stack failed",
                       {s, failed});
    }
}

// Group k holds channel k of every stack whose slice is enabled: six engines in parallel.
void Trainer::train_all(std::uint64_t slice_mask)
{
    for (std::uint32_t k = 0; k < JAL_HBM_CHANNELS_PER_STACK; ++k) {
        std::array<std::uint32_t, kMaxGroup> group{};
        std::uint32_t n = 0;
        for (std::uint32_t st = 0; st < JAL_HBM_STACKS; ++st) {
            const std::uint32_t ch = st * JAL_HBM_CHANNELS_PER_STACK + k;
            if ((slice_mask >> jal_slice_of_channel(ch)) & 1)
                group[n++] = ch;
            else
                state_.channels[ch] = ChannelTrained{};
        }
        if (n) train_group(std::span<const std::uint32_t>(group.data(), n));
    }
    apply_stack_rule();
    journal_.event(JAL_SRC_HBM, JAL_SEV_INFO, host::kEvHbmTrained, "hbm trained",
                   {state_.count(JAL_HBM_CH_OK), state_.count(JAL_HBM_CH_REPAIRED),
                    state_.count(JAL_HBM_CH_FAILED), state_.count(JAL_HBM_CH_UNTRAINED)});
}

}  // namespace jal::fw::hbm
