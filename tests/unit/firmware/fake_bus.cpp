#include "fake_bus.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "jal/hw/regs.h"
#include "jal/hw/status.h"

namespace fake {

namespace {
std::uint64_t mix(std::uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}
Eye eye_at(int c, int h, int vref, int opt)
{
    const int hh = h - std::abs(vref - opt) / 2;
    if (hh < 0) return {};
    return {c - hh, c + hh};
}
bool in(const Eye& e, int t)
{
    return t >= e.lo && t <= e.hi;
}
}  // namespace

// ---------------------------------------------------------------- PHY
FakePhy::FakePhy()
{
    for (std::uint32_t ch = 0; ch < JAL_HBM_CHANNELS; ++ch) {
        ChannelTruth& t = truth[ch];
        t.vref_opt = 8 + static_cast<int>(mix(ch * 7 + 1) % 16);
        t.wrlvl_point = 6 + static_cast<int>(mix(ch * 7 + 2) % 35);
        for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) {
            const std::uint64_t k = ch * 1000 + l;
            t.lanes[l].rd_c = 18 + static_cast<int>(mix(k * 4 + 3) % 28);
            t.lanes[l].rd_h = 7 + static_cast<int>(mix(k * 4 + 4) % 6);
            t.lanes[l].wr_c = 18 + static_cast<int>(mix(k * 4 + 5) % 28);
            t.lanes[l].wr_h = 7 + static_cast<int>(mix(k * 4 + 6) % 6);
        }
    }
}

Eye FakePhy::read_eye(std::uint32_t ch, std::uint32_t lane, int vref) const
{
    const auto& l = truth[ch].lanes[lane];
    return l.dead ? Eye{} : eye_at(l.rd_c, l.rd_h, vref, truth[ch].vref_opt);
}
Eye FakePhy::write_eye(std::uint32_t ch, std::uint32_t lane, int vref) const
{
    const auto& l = truth[ch].lanes[lane];
    return l.dead ? Eye{} : eye_at(l.wr_c, l.wr_h, vref, truth[ch].vref_opt);
}

bool FakePhy::pass(std::uint32_t ch, std::uint32_t lane, bool write) const
{
    const State& s = state[ch];
    if (truth[ch].lanes[lane].dead) return false;
    if (write && (s.wrlvl < truth[ch].wrlvl_point || s.wrlvl > truth[ch].wrlvl_point + 3))
        return false;
    const Eye e = write ? write_eye(ch, lane, s.vref) : read_eye(ch, lane, s.vref);
    const int tap = write ? s.wr[lane] : s.rd[lane];
    if (e.hi < e.lo) return false;
    if (in(e, tap)) return true;
    if (flicker && (tap == e.lo - 1 || tap == e.hi + 1))
        return mix(ch * 131 + lane * 7 + tap * 1009 + s.tests * 17 + write) & 1;
    return false;
}

std::uint32_t FakePhy::read(std::uint32_t addr) const
{
    const State& s = state[ch_sel_];
    switch (addr) {
    case JAL_HBM_CH_SEL:
        return ch_sel_;
    case JAL_HBM_LANE_SEL:
        return lane_sel_;
    case JAL_HBM_RD_DELAY:
        return lane_sel_ < JAL_HBM_LANES ? s.rd[lane_sel_] : 0;
    case JAL_HBM_WR_DELAY:
        return lane_sel_ < JAL_HBM_LANES ? s.wr[lane_sel_] : 0;
    case JAL_HBM_VREF:
        return s.vref;
    case JAL_HBM_WRLVL_DELAY:
        return s.wrlvl;
    case JAL_HBM_RESULT0:
        return s.result[0];
    case JAL_HBM_RESULT1:
        return s.result[1];
    case JAL_HBM_RESULT2:
        return s.result[2];
    case JAL_HBM_ERRORS:
        return s.errors;
    case JAL_HBM_CH_ENABLE:
        return s.enabled;
    default:
        return 0;
    }
}

std::uint64_t FakePhy::ready_ns(std::uint32_t addr) const
{
    const bool result = addr == JAL_HBM_RESULT0 || addr == JAL_HBM_RESULT1 ||
                        addr == JAL_HBM_RESULT2 || addr == JAL_HBM_ERRORS;
    return result ? busy_until_ns[ch_sel_ / JAL_HBM_CHANNELS_PER_STACK] : 0;
}

void FakePhy::write(std::uint32_t addr, std::uint32_t v, std::uint64_t now_ns)
{
    State& s = state[ch_sel_];
    switch (addr) {
    case JAL_HBM_CH_SEL:
        if (v < JAL_HBM_CHANNELS) ch_sel_ = v;
        return;
    case JAL_HBM_LANE_SEL:
        lane_sel_ = v;
        return;
    case JAL_HBM_RD_DELAY:
    case JAL_HBM_WR_DELAY: {
        auto& taps = addr == JAL_HBM_RD_DELAY ? s.rd : s.wr;
        if (lane_sel_ == JAL_HBM_LANE_ALL)
            taps.fill(static_cast<std::uint8_t>(v % 64));
        else if (lane_sel_ < JAL_HBM_LANES)
            taps[lane_sel_] = static_cast<std::uint8_t>(v % 64);
        return;
    }
    case JAL_HBM_VREF:
        s.vref = static_cast<std::uint8_t>(v % 32);
        return;
    case JAL_HBM_WRLVL_DELAY:
        s.wrlvl = static_cast<std::uint8_t>(v % 64);
        return;
    case JAL_HBM_REMAP:
        if (((v >> 8) & 0xff) < 4) s.remap[(v >> 8) & 0xff] = static_cast<std::uint8_t>(v & 0xff);
        return;
    case JAL_HBM_CH_ENABLE:
        s.enabled = v & 1;
        return;
    case JAL_HBM_CMD:
        command(v, now_ns);
        return;
    default:
        return;
    }
}

void FakePhy::command(std::uint32_t v, std::uint64_t now_ns)
{
    State& s = state[ch_sel_];
    const ChannelTruth& t = truth[ch_sel_];
    auto set_result = [&](auto pred) {
        s.result = {};
        for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l)
            if (pred(l)) s.result[l / 32] |= 1u << (l % 32);
    };
    auto occupy = [&](std::uint64_t us) {
        std::uint64_t& busy = busy_until_ns[ch_sel_ / JAL_HBM_CHANNELS_PER_STACK];
        busy = std::max(busy, now_ns) + us * 1000;
        ++commands;
    };
    switch (v) {
    case JAL_HBM_CMD_CONNECT:
        set_result([&](std::uint32_t l) { return !t.lanes[l].dead; });
        occupy(2);
        return;
    case JAL_HBM_CMD_WRLVL:
        s.result = {s.wrlvl >= t.wrlvl_point ? 1u : 0u, 0, 0};
        occupy(2);
        return;
    case JAL_HBM_CMD_READ_TEST:
    case JAL_HBM_CMD_WRITE_TEST: {
        ++s.tests;
        const bool w = v == JAL_HBM_CMD_WRITE_TEST;
        set_result([&](std::uint32_t l) { return pass(ch_sel_, l, w); });
        occupy(2);
        return;
    }
    case JAL_HBM_CMD_MEMTEST: {
        std::uint32_t failing = 0;
        for (std::uint32_t dq = 0; dq < JAL_HBM_DQ_LANES; ++dq) {
            std::uint32_t carrier = dq;
            for (std::uint32_t k = 0; k < 4; ++k)
                if (s.remap[k] == dq) carrier = JAL_HBM_DQ_LANES + k;
            const bool lvl = s.wrlvl >= t.wrlvl_point && s.wrlvl <= t.wrlvl_point + 3;
            const Eye re = read_eye(ch_sel_, carrier, s.vref),
                      we = write_eye(ch_sel_, carrier, s.vref);
            if (t.lanes[carrier].dead || !lvl || !in(re, s.rd[carrier]) || !in(we, s.wr[carrier]))
                ++failing;
        }
        s.errors = failing * 4096;
        occupy(200);
        return;
    }
    case JAL_HBM_CMD_RESET:
        s = State{};
        occupy(2);
        return;
    default:
        return;
    }
}

// ---------------------------------------------------------------- slices, power
std::uint64_t FakeSlices::done(std::uint64_t now_us) const
{
    std::uint64_t d = 0;
    for (std::uint32_t s = 0; s < 64; ++s) {
        const std::uint64_t bit = 1ull << s;
        if ((bist_started & bit) && (reset & bit) && !(fused & bit) && !(silent & bit) &&
            now_us >= bist_start_us[s] + bist_us)
            d |= bit;
    }
    return d;
}

double FakePower::power_w() const
{
    const double v = voltage_mv / double(JAL_VOLTAGE_MAX_MV);
    return idle_w + (full_load_w - idle_w) * load * (double(clock_mhz) / JAL_CLOCK_MAX_MHZ) * v * v;
}

double FakePower::core_current_a() const
{
    return current_scale * (power_w() - 40) / (voltage_mv / 1000.0);
}

// ---------------------------------------------------------------- bus
FakeBus::FakeBus()
{
    power.voltage_mv = jal_vf_min_mv(power.clock_mhz);
    jal::fw::hal::set_native_bus(this);
}

FakeBus::~FakeBus()
{
    jal::fw::hal::set_native_bus(nullptr);
}

std::vector<std::uint32_t> FakeBus::writes_to(std::uint32_t addr) const
{
    std::vector<std::uint32_t> out;
    for (auto& [a, v] : writes)
        if (a == addr) out.push_back(v);
    return out;
}

std::vector<std::string> FakeBus::console_lines() const
{
    std::vector<std::string> out;
    std::string cur;
    for (auto c : console) {
        if (c == '\n') {
            out.push_back(cur);
            cur.clear();
        } else {
            cur.push_back(static_cast<char>(c));
        }
    }
    return out;
}

std::uint32_t FakeBus::read32(std::uint32_t addr)
{
    now_ns += JAL_MGMT_MMIO_NS;
    std::uint32_t v = 0;
    if (read_hook && read_hook(addr, v)) return v;
    const std::uint64_t now = now_us();
    auto lo = [](std::uint64_t m) { return static_cast<std::uint32_t>(m); };
    auto hi = [](std::uint64_t m) { return static_cast<std::uint32_t>(m >> 32); };
    switch (addr) {
    case JAL_SYS_ID:
        return JAL_SYS_ID_MAGIC;
    case JAL_SYS_NOW_US_LO:
        now_hi_latch_ = hi(now);
        return lo(now);
    case JAL_SYS_NOW_US_HI:
        return now_hi_latch_;
    case JAL_SYS_EVENTS:
        return events;
    case JAL_SYS_RESET_CAUSE:
        return reset_cause;
    case JAL_SYS_BOOT_COUNT:
        return boot_count;
    case JAL_SYS_CHIP_INDEX:
        return chip_index;
    case JAL_SYS_WDT_RESETS:
        return wdt_resets;
    case JAL_SLICE_FUSE_LO:
        return lo(slices.fused);
    case JAL_SLICE_FUSE_HI:
        return hi(slices.fused);
    case JAL_SLICE_RESET_LO:
        return lo(slices.reset);
    case JAL_SLICE_RESET_HI:
        return hi(slices.reset);
    case JAL_SLICE_BIST_DONE_LO:
        return lo(slices.done(now));
    case JAL_SLICE_BIST_DONE_HI:
        return hi(slices.done(now));
    case JAL_SLICE_BIST_PASS_LO:
        return lo(slices.done(now) & ~slices.failing);
    case JAL_SLICE_BIST_PASS_HI:
        return hi(slices.done(now) & ~slices.failing);
    case JAL_SLICE_ENABLE_LO:
        return lo(slices.enable);
    case JAL_SLICE_ENABLE_HI:
        return hi(slices.enable);
    case JAL_SLICE_GATE_LO:
        return lo(slices.gate);
    case JAL_SLICE_GATE_HI:
        return hi(slices.gate);
    case JAL_SLICE_BUSY_LO:
        return lo(slices.busy);
    case JAL_SLICE_BUSY_HI:
        return hi(slices.busy);
    case JAL_PWR_POWER_MW:
        return static_cast<std::uint32_t>(std::lround(power.power_w() * 1000));
    case JAL_PWR_RAIL_CURRENT_MA(0):
        return static_cast<std::uint32_t>(std::lround(power.core_current_a() * 1000));
    case JAL_PWR_RAIL_VOLTAGE_MV(0):
        return power.voltage_mv;
    case JAL_PWR_TEMP_JUNCTION_MC:
        return static_cast<std::uint32_t>(power.temp_mc);
    case JAL_PWR_CLOCK_MHZ:
        return power.clock_mhz;
    case JAL_PWR_VOLTAGE_MV:
        return power.voltage_mv;
    case JAL_HOSTIF_FUNC_PRESENT: {
        std::uint32_t m = 0;
        for (std::uint32_t fn = 0; fn < JAL_MGMT_MAX_FUNCS; ++fn)
            m |= fns[fn].present ? 1u << fn : 0;
        return m;
    }
    case JAL_HOSTIF_FUNC_EVENTS:
        return func_events;
    default:
        break;
    }
    if (addr >= JAL_MGMT_REG(JAL_MGMT_HBM, 0) && addr < JAL_MGMT_REG(JAL_MGMT_HBM, 0x40)) {
        now_ns = std::max(now_ns, phy.ready_ns(addr));
        return phy.read(addr);
    }
    return reg(addr);
}

void FakeBus::write32(std::uint32_t addr, std::uint32_t value)
{
    now_ns += JAL_MGMT_MMIO_NS;
    if (log_writes || addr == JAL_PWR_CLOCK_MHZ || addr == JAL_PWR_VOLTAGE_MV)
        writes.emplace_back(addr, value);
    if (write_hook) write_hook(addr, value);
    auto set_lo = [](std::uint64_t& m, std::uint32_t v) { m = (m & ~0xffffffffull) | v; };
    auto set_hi = [](std::uint64_t& m, std::uint32_t v) {
        m = (m & 0xffffffffull) | (std::uint64_t{v} << 32);
    };
    auto start_bist = [&](std::uint64_t mask) {
        for (std::uint32_t s = 0; s < 64; ++s)
            if (mask >> s & 1) slices.bist_start_us[s] = now_us();
        slices.bist_started |= mask;
    };
    switch (addr) {
    case JAL_SYS_EVENTS_CLEAR:
        events &= ~value;
        return;
    case JAL_SYS_CONSOLE:
        console.push_back(static_cast<std::uint8_t>(value));
        return;
    case JAL_SLICE_RESET_LO:
        set_lo(slices.reset, value);
        return;
    case JAL_SLICE_RESET_HI:
        set_hi(slices.reset, value);
        return;
    case JAL_SLICE_BIST_START_LO:
        start_bist(value);
        return;
    case JAL_SLICE_BIST_START_HI:
        start_bist(std::uint64_t{value} << 32);
        return;
    case JAL_SLICE_ENABLE_LO:
        set_lo(slices.enable, value);
        return;
    case JAL_SLICE_ENABLE_HI:
        set_hi(slices.enable, value);
        return;
    case JAL_SLICE_GATE_LO:
        set_lo(slices.gate, value);
        return;
    case JAL_SLICE_GATE_HI:
        set_hi(slices.gate, value);
        return;
    case JAL_PWR_CLOCK_MHZ:
        power.clock_mhz = std::clamp(value, JAL_CLOCK_MIN_MHZ, JAL_CLOCK_MAX_MHZ);
        if (power.voltage_mv < jal_vf_min_mv(power.clock_mhz)) ++power.timing_violations;
        return;
    case JAL_PWR_VOLTAGE_MV:
        power.voltage_mv = std::clamp(value, JAL_VOLTAGE_MIN_MV, JAL_VOLTAGE_MAX_MV);
        if (power.voltage_mv < jal_vf_min_mv(power.clock_mhz)) ++power.timing_violations;
        return;
    case JAL_HOSTIF_FUNC_EVENTS:
        func_events &= ~value;
        return;
    case JAL_HOSTIF_MSI:
        msis.push_back(value);
        return;
    default:
        break;
    }
    if (addr >= JAL_MGMT_REG(JAL_MGMT_HBM, 0) && addr < JAL_MGMT_REG(JAL_MGMT_HBM, 0x40)) {
        phy.write(addr, value, now_ns);
        return;
    }
    regs[addr] = value;
}

void FakeBus::wait_for_event()
{
    ++waits;
    if (events) return;
    // Jump to the next 1 ms tick.
    now_ns = (now_ns / 1000000 + 1) * 1000000;
    events |= JAL_EV_TICK;
}

std::uint32_t FakeBus::dma(std::uint32_t function, std::uint64_t host_addr, void* local,
                           std::uint32_t len, bool to_host)
{
    now_ns += JAL_MGMT_MMIO_NS * 6;
    if (function >= JAL_MGMT_MAX_FUNCS || !fns[function].present) return JAL_STATUS_NO_DEVICE;
    HostFunction& f = fns[function];
    // Offsets, not ends: host_addr + len may wrap around 2^64.
    if (len == 0 || len > JAL_DMA_LEN_MAX || host_addr < f.mem_base ||
        host_addr - f.mem_base > f.mem.size() || len > f.mem.size() - (host_addr - f.mem_base))
        return JAL_STATUS_DMA_FAULT;
    std::uint8_t* p = &f.mem[host_addr - f.mem_base];
    if (to_host)
        std::memcpy(p, local, len);
    else
        std::memcpy(local, p, len);
    return JAL_STATUS_OK;
}

void FakeBus::attach(std::uint32_t fn)
{
    fns[fn].present = true;
    regs[JAL_HOSTIF_FN(fn, JAL_FN_GENERATION)]++;
    regs[JAL_HOSTIF_FN(fn, JAL_FN_ATTACHES)]++;
    func_events |= 1u << fn;
    events |= JAL_EV_FUNC | JAL_EV_HOST;
}

void FakeBus::detach(std::uint32_t fn)
{
    fns[fn].present = false;
    regs[JAL_HOSTIF_FN(fn, JAL_FN_GENERATION)]++;
    regs[JAL_HOSTIF_FN(fn, JAL_FN_ATTACHES)]++;
    regs[JAL_HOSTIF_FN(fn, JAL_FN_CTRL)] = 0;
    regs[JAL_HOSTIF_FN(fn, JAL_FN_ADMIN_STATUS)] = 0;
    func_events |= 1u << fn;
    events |= JAL_EV_FUNC | JAL_EV_HOST;
}

void FakeBus::host_write(std::uint32_t fn, std::uint32_t fn_off, std::uint32_t value)
{
    regs[JAL_HOSTIF_FN(fn, fn_off)] = value;
    if (fn_off == JAL_FN_CTRL) {
        regs[JAL_HOSTIF_FN(fn, JAL_FN_GENERATION)]++;
        if (!(value & JAL_ADMIN_CTRL_ENABLE)) regs[JAL_HOSTIF_FN(fn, JAL_FN_ADMIN_STATUS)] = 0;
    }
    func_events |= 1u << fn;
    events |= JAL_EV_HOST;
}

}  // namespace fake
