#include "emu/chip/hbm_phy.hpp"

#include "emu/chip/seeded.hpp"
#include "jal/hw/mgmt.h"

#include <algorithm>
#include <cstdlib>

namespace jal::emu {

namespace {
constexpr std::uint32_t reg(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_HBM;
}
constexpr std::uint32_t kWordsPerLane = 4096;  // memtest words that touch one lane
}  // namespace

HbmPhy::HbmPhy(std::uint64_t seed,
               const std::vector<std::pair<std::uint32_t, std::uint32_t>>& dead_lanes)
    : seed_(seed)
{
    for (std::uint32_t ch = 0; ch < JAL_HBM_CHANNELS; ++ch) {
        ChannelTruth& t = truth_[ch];
        t.vref_opt = static_cast<std::uint8_t>(seeded_range(seed, {1, ch}, 8, 23));
        t.wrlvl_point = static_cast<std::uint8_t>(seeded_range(seed, {2, ch}, 6, 40));
        for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) {
            LaneTruth& lt = t.lanes[l];
            lt.rd_center = static_cast<std::uint8_t>(seeded_range(seed, {3, ch, l}, 18, 45));
            lt.rd_half = static_cast<std::uint8_t>(seeded_range(seed, {4, ch, l}, 7, 12));
            lt.wr_center = static_cast<std::uint8_t>(seeded_range(seed, {5, ch, l}, 18, 45));
            lt.wr_half = static_cast<std::uint8_t>(seeded_range(seed, {6, ch, l}, 7, 12));
            lt.dead = false;
        }
    }
    for (auto [ch, lane] : dead_lanes)
        if (ch < JAL_HBM_CHANNELS && lane < JAL_HBM_LANES) truth_[ch].lanes[lane].dead = true;
    reset();
}

void HbmPhy::reset()
{
    for (auto& s : state_) s = ChannelState{};
    ch_sel_ = lane_sel_ = 0;
}

// The eye narrows by one tap on each side for every two Vref steps away from the optimum.
static Eye eye_at(int center, int half, int vref, int vref_opt)
{
    const int h = half - std::abs(vref - vref_opt) / 2;
    if (h < 0) return {};
    return {center - h, center + h};
}

Eye HbmPhy::read_eye(std::uint32_t ch, std::uint32_t lane, std::uint32_t vref) const
{
    const auto& lt = truth_[ch].lanes[lane];
    if (lt.dead) return {};
    return eye_at(lt.rd_center, lt.rd_half, static_cast<int>(vref), truth_[ch].vref_opt);
}

Eye HbmPhy::write_eye(std::uint32_t ch, std::uint32_t lane, std::uint32_t vref) const
{
    const auto& lt = truth_[ch].lanes[lane];
    if (lt.dead) return {};
    return eye_at(lt.wr_center, lt.wr_half, static_cast<int>(vref), truth_[ch].vref_opt);
}

std::uint32_t HbmPhy::carrier(std::uint32_t ch, std::uint32_t dq) const
{
    for (std::uint32_t k = 0; k < JAL_HBM_SPARE_LANES; ++k)
        if (state_[ch].remap[k] == dq) return JAL_HBM_DQ_LANES + k;
    return dq;
}

bool HbmPhy::pattern_pass(std::uint32_t ch, std::uint32_t lane, bool write_test) const
{
    const ChannelState& s = state_[ch];
    if (truth_[ch].lanes[lane].dead) return false;
    if (write_test) {
        const int lvl = s.wrlvl, point = truth_[ch].wrlvl_point;
        if (lvl < point || lvl > point + 3) return false;
    }
    const Eye e = write_test ? write_eye(ch, lane, s.vref) : read_eye(ch, lane, s.vref);
    const int tap = write_test ? s.wr[lane] : s.rd[lane];
    if (e.empty()) return false;
    if (e.contains(tap)) return true;
    // One tap past either edge the data eye is marginal: it passes about half the time.
    if (tap == e.lo - 1 || tap == e.hi + 1)
        return seeded(seed_, {7, ch, lane, static_cast<std::uint64_t>(tap), s.tests, write_test}) &
               1;
    return false;
}

bool HbmPhy::strictly_inside(std::uint32_t ch, std::uint32_t lane) const
{
    const ChannelState& s = state_[ch];
    if (truth_[ch].lanes[lane].dead) return false;
    const int lvl = s.wrlvl, point = truth_[ch].wrlvl_point;
    if (lvl < point || lvl > point + 3) return false;
    return read_eye(ch, lane, s.vref).contains(s.rd[lane]) &&
           write_eye(ch, lane, s.vref).contains(s.wr[lane]);
}

void HbmPhy::set_result(ChannelState& s, const std::array<bool, JAL_HBM_LANES>& pass)
{
    s.result = {};
    for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l)
        if (pass[l]) s.result[l / 32] |= 1u << (l % 32);
}

std::uint64_t HbmPhy::command_ns(std::uint32_t cmd)
{
    switch (cmd) {
    case JAL_HBM_CMD_CONNECT:
    case JAL_HBM_CMD_WRLVL:
    case JAL_HBM_CMD_READ_TEST:
    case JAL_HBM_CMD_WRITE_TEST:
    case JAL_HBM_CMD_RESET:
        return std::uint64_t{JAL_HBM_CMD_US} * 1000;
    case JAL_HBM_CMD_MEMTEST:
        return std::uint64_t{JAL_HBM_MEMTEST_US} * 1000;
    default:
        return 0;
    }
}

// The command's effect (and result) is decided by the channel's settings now; only the
// time at which the result may be read depends on the engine.
void HbmPhy::run(std::uint32_t cmd)
{
    ChannelState& s = state_[ch_sel_];
    const ChannelTruth& t = truth_[ch_sel_];
    std::array<bool, JAL_HBM_LANES> pass{};
    switch (cmd) {
    case JAL_HBM_CMD_CONNECT:
        for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) pass[l] = !t.lanes[l].dead;
        set_result(s, pass);
        return;
    case JAL_HBM_CMD_WRLVL:
        s.result = {s.wrlvl >= t.wrlvl_point ? 1u : 0u, 0, 0};
        return;
    case JAL_HBM_CMD_READ_TEST:
    case JAL_HBM_CMD_WRITE_TEST:
        ++s.tests;
        for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l)
            pass[l] = pattern_pass(ch_sel_, l, cmd == JAL_HBM_CMD_WRITE_TEST);
        set_result(s, pass);
        return;
    case JAL_HBM_CMD_MEMTEST: {
        std::uint32_t failing = 0;
        for (std::uint32_t dq = 0; dq < JAL_HBM_DQ_LANES; ++dq)
            if (!strictly_inside(ch_sel_, carrier(ch_sel_, dq))) ++failing;
        s.errors = failing * kWordsPerLane;
        return;
    }
    case JAL_HBM_CMD_RESET:
        s = ChannelState{};
        return;
    default:
        return;
    }
}

std::uint32_t HbmPhy::read(std::uint32_t offset) const
{
    const ChannelState& s = state_[ch_sel_];
    const std::uint32_t lane = lane_sel_ < JAL_HBM_LANES ? lane_sel_ : 0;
    switch (offset) {
    case reg(JAL_HBM_CH_SEL):
        return ch_sel_;
    case reg(JAL_HBM_LANE_SEL):
        return lane_sel_;
    case reg(JAL_HBM_RD_DELAY):
        return s.rd[lane];
    case reg(JAL_HBM_WR_DELAY):
        return s.wr[lane];
    case reg(JAL_HBM_VREF):
        return s.vref;
    case reg(JAL_HBM_WRLVL_DELAY):
        return s.wrlvl;
    case reg(JAL_HBM_RESULT0):
        return s.result[0];
    case reg(JAL_HBM_RESULT1):
        return s.result[1];
    case reg(JAL_HBM_RESULT2):
        return s.result[2];
    case reg(JAL_HBM_ERRORS):
        return s.errors;
    case reg(JAL_HBM_CH_ENABLE):
        return s.enabled ? 1 : 0;
    case reg(JAL_HBM_ECC_CORRECTED):
        return ecc_[ch_sel_][0];
    case reg(JAL_HBM_ECC_UNCORRECTED):
        return ecc_[ch_sel_][1];
    default:
        return 0;
    }
}

void HbmPhy::count_ecc(std::uint32_t ch, std::uint32_t corrected, std::uint32_t uncorrected)
{
    if (ch >= JAL_HBM_CHANNELS) return;
    ecc_[ch][0] += corrected;
    ecc_[ch][1] += uncorrected;
}

std::uint32_t HbmPhy::ecc_total(std::uint32_t which) const
{
    std::uint32_t n = 0;
    for (const auto& c : ecc_) n += c[which & 1];
    return n;
}

void HbmPhy::kill_lane(std::uint32_t ch, std::uint32_t lane)
{
    if (ch < JAL_HBM_CHANNELS && lane < JAL_HBM_LANES) truth_[ch].lanes[lane].dead = true;
}

std::uint64_t HbmPhy::ready_ns(std::uint32_t offset) const
{
    switch (offset) {
    case reg(JAL_HBM_RESULT0):
    case reg(JAL_HBM_RESULT1):
    case reg(JAL_HBM_RESULT2):
    case reg(JAL_HBM_ERRORS):
        return busy_until_ns_[jal_hbm_stack_of_channel(ch_sel_)];
    default:
        return 0;
    }
}

void HbmPhy::write(std::uint32_t offset, std::uint32_t value, std::uint64_t now_ns)
{
    ChannelState& s = state_[ch_sel_];
    const auto tap = static_cast<std::uint8_t>(value % JAL_HBM_DELAY_TAPS);
    switch (offset) {
    case reg(JAL_HBM_CH_SEL):
        if (value < JAL_HBM_CHANNELS) ch_sel_ = value;
        return;
    case reg(JAL_HBM_LANE_SEL):
        lane_sel_ = value;
        return;
    case reg(JAL_HBM_RD_DELAY):
    case reg(JAL_HBM_WR_DELAY): {
        auto& taps = offset == reg(JAL_HBM_RD_DELAY) ? s.rd : s.wr;
        if (lane_sel_ == JAL_HBM_LANE_ALL)
            taps.fill(tap);
        else if (lane_sel_ < JAL_HBM_LANES)
            taps[lane_sel_] = tap;
        return;
    }
    case reg(JAL_HBM_VREF):
        s.vref = static_cast<std::uint8_t>(value % JAL_HBM_VREF_STEPS);
        return;
    case reg(JAL_HBM_WRLVL_DELAY):
        s.wrlvl = tap;
        return;
    case reg(JAL_HBM_CMD): {
        const std::uint64_t cost = command_ns(value);
        if (!cost) return;  // unknown command: nothing happens
        std::uint64_t& busy = busy_until_ns_[jal_hbm_stack_of_channel(ch_sel_)];
        busy = std::max(busy, now_ns) + cost;
        run(value);
        return;
    }
    case reg(JAL_HBM_REMAP): {
        const std::uint32_t spare = (value >> 8) & 0xff, lane = value & 0xff;
        if (spare < JAL_HBM_SPARE_LANES && (lane < JAL_HBM_DQ_LANES || lane == 0xff))
            s.remap[spare] = static_cast<std::uint8_t>(lane);
        return;
    }
    case reg(JAL_HBM_CH_ENABLE):
        s.enabled = value & 1;
        return;
    default:
        return;
    }
}

}  // namespace jal::emu
