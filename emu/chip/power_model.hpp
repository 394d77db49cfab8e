// Package power and temperature as functions of clock, voltage, activity and temperature.
// Knows nothing of data: the management core's POWER registers read its outputs and set
// its clock and voltage, which closes the power-management loop.
#pragma once

#include "jal/hw/telemetry.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

namespace jal::emu {

struct PowerInputs {
    std::uint32_t slices_powered = 0;  // not gated and out of reset
    double busy_fraction = 0;          // of powered slices doing work, 0..1
};

class PowerModel {
public:
    // load_watts: synthetic activity chosen so that the package draws about this much at
    // the maximum clock with every slice busy (0: idle chip).
    PowerModel(double load_watts, double ambient_c);

    void reset();  // power-on clock and voltage, temperatures at ambient
    void step(double dt_s, const PowerInputs& in);

    std::uint32_t read(std::uint32_t offset);
    void write(std::uint32_t offset, std::uint32_t value);

    double power_w() const { return power_w_; }
    double junction_c() const { return tj_c_; }
    double hbm_c() const { return thbm_c_; }
    // Read by kernel dispatches on the command processor's threads, hence atomic.
    std::uint32_t clock_mhz() const { return clock_mhz_.load(std::memory_order_relaxed); }
    std::uint32_t voltage_mv() const { return voltage_mv_.load(std::memory_order_relaxed); }
    // Modelled dynamic energy of a finished kernel dispatch that took `seconds` of modelled
    // time (any thread). From the next integration step on it is drawn as extra dynamic
    // power at the dispatch's own average (joules / seconds) until spent, so telemetry
    // shows what the kernel drew; concurrent dispatches add up, to at most kDispatchMaxWatts.
    void add_dispatch_energy(double joules, double seconds);
    static constexpr double kDispatchMaxWatts = 600;
    bool has_load() const { return load_watts_ > 0; }
    // Run-time changes (fault injection; management-core thread, as step()).
    void set_load_watts(double w) { load_watts_ = w; }
    void set_ambient_c(double c) { ambient_c_ = c; }
    double ambient_c() const { return ambient_c_; }
    double load_watts() const { return load_watts_; }
    std::uint64_t timing_violations() const { return timing_violations_; }

private:
    void check_timing();

    double load_watts_, ambient_c_;
    std::atomic<std::uint32_t> clock_mhz_{0}, voltage_mv_{0};
    std::mutex dispatch_m_;
    struct Draw {
        double joules, watts;  // still to draw, and at what rate
    };
    std::vector<Draw> draws_;
    double power_w_ = 0, tj_c_ = 0, thbm_c_ = 0, energy_uj_ = 0;
    std::array<double, JAL_RAIL_COUNT> rail_w_{};
    std::uint32_t energy_hi_latch_ = 0;
    double activity_ = 0;
    std::uint64_t timing_violations_ = 0;
};

}  // namespace jal::emu
