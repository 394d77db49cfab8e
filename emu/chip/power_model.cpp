#include "emu/chip/power_model.hpp"

#include "emu/util/log.hpp"
#include "jal/hw/mgmt.h"

#include <algorithm>
#include <cmath>

namespace jal::emu {

namespace {
constexpr std::uint32_t reg(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_POWER;
}

// Model constants (docs/emulator.md). Static power at nominal voltage and 25 °C.
constexpr double kIoWatts = 30;           // I/O chiplet, PCIe, links
constexpr double kHbmIdleWatts = 35;      // refresh and PHYs
constexpr double kSramLeakWatts = 15;     // all 64 slices powered
constexpr double kCoreLeakWatts = 45;     // all 64 slices powered
constexpr double kLeakPerDegree = 0.012;  // leakage grows 1.2 %/°C
constexpr double kStaticNominal = kIoWatts + kHbmIdleWatts + kSramLeakWatts + kCoreLeakWatts;
constexpr double kCoreShare = 0.80, kSramShare = 0.08, kHbmShare = 0.12;  // of dynamic power
constexpr double kThetaJunction = 0.065;                                  // °C per W, die to inlet
constexpr double kThetaHbm = 0.030;
constexpr double kTauJunction = 0.15;  // s
constexpr double kTauHbm = 0.40;
constexpr double kSramMv = 750, kHbmMv = 1100, kIoMv = 900;
constexpr std::uint32_t kBootClockMhz = 1000;
}  // namespace

PowerModel::PowerModel(double load_watts, double ambient_c)
    : load_watts_(load_watts), ambient_c_(ambient_c)
{
    reset();
}

void PowerModel::reset()
{
    clock_mhz_ = kBootClockMhz;
    voltage_mv_ = jal_vf_min_mv(kBootClockMhz);
    if (tj_c_ == 0) tj_c_ = thbm_c_ = ambient_c_;  // temperatures survive a chip reset
    power_w_ = 0;
    std::lock_guard lock(dispatch_m_);
    draws_.clear();
}

void PowerModel::add_dispatch_energy(double joules, double seconds)
{
    if (!(joules > 0)) return;
    const double watts =
        seconds > 0 ? std::min(joules / seconds, kDispatchMaxWatts) : kDispatchMaxWatts;
    std::lock_guard lock(dispatch_m_);
    draws_.push_back({joules, watts});
}

void PowerModel::step(double dt_s, const PowerInputs& in)
{
    const double v = voltage_mv() / 1000.0, vmax = JAL_VOLTAGE_MAX_MV / 1000.0;
    const double powered = in.slices_powered / 64.0;
    const double leak_t = 1 + kLeakPerDegree * (tj_c_ - 25);
    const double core_leak = kCoreLeakWatts * powered * (v / vmax) * (v / vmax) * leak_t;
    const double sram_leak = kSramLeakWatts * powered * leak_t;
    // Dynamic power scales with f·V² and with how much of the chip is busy.
    activity_ = std::clamp(in.busy_fraction * powered, 0.0, 1.0);
    const double dyn_max = std::max(0.0, load_watts_ - kStaticNominal);
    double dyn =
        dyn_max * activity_ * (double(clock_mhz()) / JAL_CLOCK_MAX_MHZ) * (v / vmax) * (v / vmax);
    // Kernel dispatches: their modelled energy (already at the voltage they ran at) is
    // drawn over the following steps at each dispatch's own power, kDispatchMaxWatts at most.
    double kernel_w = 0;
    if (dt_s > 0) {
        std::lock_guard lock(dispatch_m_);
        double budget = kDispatchMaxWatts * dt_s, drawn = 0;
        for (Draw& d : draws_) {
            const double e = std::min({d.joules, d.watts * dt_s, budget - drawn});
            d.joules -= e;
            drawn += e;
        }
        std::erase_if(draws_, [](const Draw& d) { return d.joules <= 1e-15; });
        kernel_w = drawn / dt_s;
    }
    dyn += kernel_w;
    activity_ = std::clamp(activity_ + kernel_w / kDispatchMaxWatts, 0.0, 1.0);

    rail_w_[JAL_RAIL_CORE] = core_leak + dyn * kCoreShare;
    rail_w_[JAL_RAIL_SRAM] = sram_leak + dyn * kSramShare;
    rail_w_[JAL_RAIL_HBM] = kHbmIdleWatts + dyn * kHbmShare;
    rail_w_[JAL_RAIL_IO] = kIoWatts;
    power_w_ = 0;
    for (double w : rail_w_) power_w_ += w;

    // First-order RC: temperature approaches ambient + θ·P with time constant τ.
    const double tj_ss = ambient_c_ + kThetaJunction * power_w_;
    const double thbm_ss = ambient_c_ + kThetaHbm * power_w_;
    tj_c_ += (tj_ss - tj_c_) * (1 - std::exp(-dt_s / kTauJunction));
    thbm_c_ += (thbm_ss - thbm_c_) * (1 - std::exp(-dt_s / kTauHbm));
    energy_uj_ += power_w_ * dt_s * 1e6;
}

void PowerModel::check_timing()
{
    if (voltage_mv() < jal_vf_min_mv(clock_mhz())) {
        ++timing_violations_;
        log(LogLevel::warn, "power: timing violation: {} MHz needs {} mV, core is at {} mV",
            clock_mhz(), jal_vf_min_mv(clock_mhz()), voltage_mv());
    }
}

std::uint32_t PowerModel::read(std::uint32_t offset)
{
    auto mw = [](double w) { return static_cast<std::uint32_t>(std::lround(w * 1000)); };
    auto mc = [](double c) {
        return static_cast<std::uint32_t>(static_cast<std::int32_t>(std::lround(c * 1000)));
    };
    static constexpr double rail_mv_fixed[JAL_RAIL_COUNT] = {0, kSramMv, kHbmMv, kIoMv};
    for (std::uint32_t r = 0; r < JAL_RAIL_COUNT; ++r) {
        const double mv = r == JAL_RAIL_CORE ? voltage_mv() : rail_mv_fixed[r];
        if (offset == reg(JAL_PWR_RAIL_CURRENT_MA(r)))
            return static_cast<std::uint32_t>(std::lround(rail_w_[r] / (mv / 1000.0) * 1000));
        if (offset == reg(JAL_PWR_RAIL_VOLTAGE_MV(r))) return static_cast<std::uint32_t>(mv);
    }
    switch (offset) {
    case reg(JAL_PWR_POWER_MW):
        return mw(power_w_);
    case reg(JAL_PWR_TEMP_JUNCTION_MC):
        return mc(tj_c_);
    case reg(JAL_PWR_TEMP_HBM_MC):
        return mc(thbm_c_);
    case reg(JAL_PWR_TEMP_AMBIENT_MC):
        return mc(ambient_c_);
    case reg(JAL_PWR_CLOCK_MHZ):
        return clock_mhz();
    case reg(JAL_PWR_VOLTAGE_MV):
        return voltage_mv();
    case reg(JAL_PWR_ENERGY_UJ_LO): {
        const auto e = static_cast<std::uint64_t>(energy_uj_);
        energy_hi_latch_ = static_cast<std::uint32_t>(e >> 32);
        return static_cast<std::uint32_t>(e);
    }
    case reg(JAL_PWR_ENERGY_UJ_HI):
        return energy_hi_latch_;
    case reg(JAL_PWR_ACTIVITY_PM):
        return static_cast<std::uint32_t>(std::lround(activity_ * 1000));
    default:
        return 0;
    }
}

void PowerModel::write(std::uint32_t offset, std::uint32_t value)
{
    switch (offset) {
    case reg(JAL_PWR_CLOCK_MHZ):
        clock_mhz_ = std::clamp(value, JAL_CLOCK_MIN_MHZ, JAL_CLOCK_MAX_MHZ);
        check_timing();
        break;
    case reg(JAL_PWR_VOLTAGE_MV):
        voltage_mv_ = std::clamp(value, JAL_VOLTAGE_MIN_MV, JAL_VOLTAGE_MAX_MV);
        check_timing();
        break;
    default:
        break;
    }
}

}  // namespace jal::emu
