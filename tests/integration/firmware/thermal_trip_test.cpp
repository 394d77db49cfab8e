// Thermal runaway and a lasting power emergency, through a real jal-emu running the firmware
// image: a die that passes its critical temperature is shut down and the chip fails safely
// (THERMAL_TRIP), and a power emergency that lasts is logged when it starts and then once a
// second, so the boot history stays in the event log.
#include <algorithm>
#include <chrono>
#include <functional>
#include <thread>

#include <gtest/gtest.h>

#include <fixture/emu_process.hpp>
#include <jal/chip_function.hpp>
#include <jal/hw/admin.h>
#include <jal/hw/mgmt.h>
#include <jal/hw/status.h>
#include <jal/hw/telemetry.h>

namespace {

using namespace std::chrono_literals;
using jal::test::EmuOptions;
using jal::test::EmuProcess;

constexpr uint16_t kEvBootDone = 0x0103;
constexpr uint16_t kEvEmergency = 0x0402;
constexpr uint16_t kEvThermalTrip = 0x0404;

jal::ChipFunction open_booted(EmuProcess& emu)
{
    jal::ChipFunction dev = jal::ChipFunction::open(0, emu.open_options());
    const jal::DeviceStatus s = dev.wait_ready(jal::test::kBootTimeout);
    EXPECT_TRUE(s.state == jal::DeviceState::ready || s.state == jal::DeviceState::failed)
        << jal::state_name(s.state) << "\n"
        << emu.output();
    return dev;
}

// Polls (a yield between reads, bounded in wall time) until `done` holds for the telemetry.
bool telemetry_until(jal::ChipFunction& dev, const std::function<bool(const jal_telemetry&)>& done)
{
    const auto give_up = std::chrono::steady_clock::now() + 120s;
    while (std::chrono::steady_clock::now() < give_up) {
        if (done(dev.telemetry())) return true;
        std::this_thread::yield();
    }
    return false;
}

size_t count_code(const jal::EventLog& log, uint16_t code)
{
    return std::count_if(log.events.begin(), log.events.end(),
                         [&](const jal_log_event& e) { return e.code == code; });
}

TEST(ThermalTrip, ADieThatPassesItsCriticalTemperatureIsShutDownAndTheChipFails)
{
    // A 125 °C inlet is above the 110 °C critical junction temperature before any load:
    // no limiter can hold that die.
    EmuOptions o;
    o.extra_args = {"--load-watts", "5000", "--ambient-c", "125"};
    EmuProcess emu(o);
    jal::ChipFunction dev = open_booted(emu);

    const auto give_up = std::chrono::steady_clock::now() + 120s;
    jal::DeviceStatus s = dev.status();
    // FAULT is written before STATUS: wait for the state, then read the fault it explains.
    while (s.state != jal::DeviceState::failed && std::chrono::steady_clock::now() < give_up) {
        std::this_thread::yield();
        s = dev.status();
    }
    ASSERT_EQ(s.state, jal::DeviceState::failed) << jal::state_name(s.state);
    ASSERT_EQ(s.fault, JAL_STATUS_THERMAL_TRIP) << jal_status_name(s.fault);

    // The compute die stays off: every slice gated, the clock at its minimum, the package
    // down to what the I/O chiplet and HBM draw, however long it sits there.
    const uint64_t tripped_us = dev.telemetry().timestamp_us;
    ASSERT_TRUE(telemetry_until(
        dev, [&](const jal_telemetry& t) { return t.timestamp_us >= tripped_us + 200'000; }));
    const jal_telemetry t = dev.telemetry();
    EXPECT_EQ(t.slices_powered, 0u);
    EXPECT_EQ(t.clock_mhz, JAL_CLOCK_MIN_MHZ);
    EXPECT_LT(t.power_mw, JAL_POWER_TDP_MW / 4) << "compute powered off";
    EXPECT_EQ(dev.status().fault, JAL_STATUS_THERMAL_TRIP) << "a trip lasts until reset";

    const jal::EventLog log = dev.event_log();
    EXPECT_EQ(count_code(log, kEvThermalTrip), 1u);
    for (const jal_log_event& e : log.events)
        if (e.code == kEvThermalTrip) {
            EXPECT_EQ(e.severity, JAL_SEV_FATAL);
            EXPECT_GE(static_cast<int32_t>(e.args[0]), JAL_TEMP_CRITICAL_MC);
            EXPECT_EQ(static_cast<int32_t>(e.args[1]), JAL_TEMP_CRITICAL_MC);
        }
    EXPECT_EQ(emu.stop(), "");
}

TEST(ThermalTrip, ALastingPowerEmergencyIsLoggedOnceASecondNotEveryTick)
{
    // 5 kW of load (the most --load-watts takes) at a 30 °C inlet: once the die is warm,
    // even the minimum clock draws about 895 W, more than 5/4 of the 700 W limit, so every
    // 1 ms tick is an emergency, while the die (about 90 °C) stays below its critical
    // temperature.
    EmuOptions o;
    o.extra_args = {"--load-watts", "5000", "--ambient-c", "30"};
    EmuProcess emu(o);
    jal::ChipFunction dev = open_booted(emu);
    const uint64_t start_us = dev.telemetry().timestamp_us;
    ASSERT_TRUE(telemetry_until(
        dev, [&](const jal_telemetry& t) { return t.timestamp_us >= start_us + 2'500'000; }));
    const jal_telemetry t = dev.telemetry();
    EXPECT_GT(t.emergency_events, 1000u) << "the emergency lasted (one count per tick)";
    EXPECT_LT(t.temp_junction_mc, JAL_TEMP_CRITICAL_MC);
    EXPECT_NE(dev.status().state, jal::DeviceState::failed);

    const jal::EventLog log = dev.event_log();
    const size_t logged = count_code(log, kEvEmergency);
    EXPECT_GE(logged, 1u);
    EXPECT_LE(logged, 5u) << "at most one a second over 2.5 s, plus the first";
    EXPECT_EQ(count_code(log, kEvBootDone), 1u) << "the boot history is still in the log";
    EXPECT_EQ(log.lost, 0u);
    // Each logged emergency after the first counts the ticks it stands for.
    uint32_t counted = 0;
    for (const jal_log_event& e : log.events)
        if (e.code == kEvEmergency) counted += e.args[2];
    EXPECT_GT(counted, 1000u);
    EXPECT_EQ(emu.stop(), "");
}

}  // namespace
