// Limiter arithmetic and the power manager against a simple plant.
#include <gtest/gtest.h>

#include "fake_bus.hpp"
#include "firmware/power/limiter.hpp"
#include "firmware/power/power_manager.hpp"
#include "firmware/power/vf.hpp"

using namespace jal::fw;
using namespace jal::fw::power;

TEST(LimiterTest, ClampClockRoundsOntoTheGrid)
{
    EXPECT_EQ(clamp_clock(0), JAL_CLOCK_MIN_MHZ);
    EXPECT_EQ(clamp_clock(5000), JAL_CLOCK_MAX_MHZ);
    EXPECT_EQ(clamp_clock(1012), 1000u);
    EXPECT_EQ(clamp_clock(1025), 1025u);
}

TEST(LimiterTest, OverTheLimitCutsInProportionToTheExcess)
{
    ProportionalLimiter l(JAL_CLOCK_MAX_MHZ);
    // 10 % over at 2000 MHz: cut ~ 2000 * 70/770 = 182 -> 200 (whole steps, rounded up).
    EXPECT_EQ(l.update(770000, 700000, 2000), 1800u);
    // Tiny excess: at least one step.
    ProportionalLimiter m(JAL_CLOCK_MAX_MHZ);
    EXPECT_EQ(m.update(700001, 700000, 2000), 1975u);
}

TEST(LimiterTest, HoldsAtTheLimitAndRaisesOnlyWithRoomForAStep)
{
    ProportionalLimiter l(1500);
    // Headroom 5 W, one step predicted at 690*2*25/1500 = 23 W: hold.
    EXPECT_EQ(l.update(695000, 700000, 1500), 1500u);
    // Lots of headroom: proportional raise.
    EXPECT_EQ(l.update(350000, 700000, 1500), 2000u);
}

TEST(LimiterTest, CutStartsFromTheOperatingPointNotAStaleCeiling)
{
    ProportionalLimiter l(JAL_CLOCK_MAX_MHZ);
    EXPECT_LT(l.update(800000, 700000, 1000), 1000u);
}

TEST(LimiterTest, ThermalActsEveryPeriodWithHysteresis)
{
    ThermalLimiter t;
    std::uint32_t c = 0;
    for (std::uint32_t i = 0; i < ThermalLimiter::kPeriodTicks; ++i)
        c = t.update(95000, 90000, 2000);
    EXPECT_EQ(c, 2000u - 3 * JAL_CLOCK_STEP_MHZ);  // 1 + 5/2 steps
    for (std::uint32_t i = 0; i < ThermalLimiter::kPeriodTicks; ++i)
        c = t.update(88000, 90000, 1925);
    EXPECT_EQ(c, 1925u) << "inside the hysteresis band: hold";
    for (std::uint32_t i = 0; i < ThermalLimiter::kPeriodTicks; ++i)
        c = t.update(80000, 90000, 1925);
    EXPECT_EQ(c, 1950u);
}

TEST(LimiterTest, MovingAverageSeedsCappedAndConverges)
{
    MovingAverage a;
    EXPECT_EQ(a.add(900000, 700000), 700000u);
    for (int i = 0; i < 1000; ++i) a.add(500000, 700000);
    EXPECT_NEAR(a.value(), 500000u, 100);
}

namespace {

struct PowerTest : ::testing::Test {
    fake::FakeBus bus;
    host::EventLog log;
    host::Journal journal{log};
    slices::SliceManager slices;
    PowerManager pm{slices, journal};

    void SetUp() override { bus.log_writes = false; }
    void start_at(std::uint32_t mhz)
    {
        bus.power.clock_mhz = mhz;
        bus.power.voltage_mv = jal_vf_min_mv(mhz);
        ASSERT_EQ(pm.start(), 0u);
    }
    void tick(int n = 1)
    {
        for (int i = 0; i < n; ++i) {
            bus.now_ns += 1000000;
            pm.tick();
        }
    }
};

TEST_F(PowerTest, InitSafeLowersClockBeforeVoltage)
{
    bus.log_writes = true;
    ASSERT_EQ(pm.init_safe(), 0u);
    EXPECT_EQ(bus.power.clock_mhz, JAL_CLOCK_MIN_MHZ);
    EXPECT_EQ(bus.power.voltage_mv, jal_vf_min_mv(JAL_CLOCK_MIN_MHZ));
    ASSERT_EQ(bus.writes.size(), 2u);
    EXPECT_EQ(bus.writes[0].first, JAL_PWR_CLOCK_MHZ);
    EXPECT_EQ(bus.writes[1].first, JAL_PWR_VOLTAGE_MV);
    EXPECT_EQ(bus.power.timing_violations, 0u);
}

TEST_F(PowerTest, RaisingWritesVoltageFirst)
{
    bus.power.clock_mhz = 600;
    bus.power.voltage_mv = jal_vf_min_mv(600);
    set_operating_point(600, bus.power.voltage_mv, 1500);
    ASSERT_EQ(bus.writes.size(), 2u);
    EXPECT_EQ(bus.writes[0].first, JAL_PWR_VOLTAGE_MV);
    EXPECT_EQ(bus.writes[1].first, JAL_PWR_CLOCK_MHZ);
    EXPECT_EQ(bus.power.timing_violations, 0u);
}

TEST_F(PowerTest, IdleChipRunsAtMaximumClock)
{
    bus.power.load = 0;
    start_at(JAL_CLOCK_MIN_MHZ);
    tick(5);
    EXPECT_EQ(bus.power.clock_mhz, JAL_CLOCK_MAX_MHZ);
    EXPECT_EQ(pm.limiter(), JAL_LIMITER_NONE);
}

TEST_F(PowerTest, HeavyLoadSettlesUnderTheLimitWithoutOscillating)
{
    // 900 W at full clock against the 700 W limit, starting at full clock.
    start_at(JAL_CLOCK_MAX_MHZ);
    int settled_at = -1;
    for (int t = 0; t < 300; ++t) {
        tick();
        const double p = bus.power.power_w();
        if (settled_at < 0 && p <= 700.0) settled_at = t;
        if (settled_at >= 0) {
            EXPECT_LE(p, 700.0) << "tick " << t;
        }
    }
    ASSERT_GE(settled_at, 0);
    EXPECT_LE(settled_at, 50);
    EXPECT_GE(bus.power.power_w(), 650.0) << "and not throttled needlessly far";
    EXPECT_EQ(bus.power.timing_violations, 0u);
    EXPECT_NE(pm.limiter(), JAL_LIMITER_NONE);
    EXPECT_GT(pm.telemetry().limiter_residency_ms[pm.limiter()], 100u);
    EXPECT_EQ(pm.telemetry().emergency_events, 1u) << "900 W is over 5/4 of 700 W";
}

TEST_F(PowerTest, ModerateOverloadIsHandledWithoutEmergency)
{
    bus.power.full_load_w = 800;
    start_at(JAL_CLOCK_MAX_MHZ);
    tick();
    EXPECT_EQ(pm.limiter(), JAL_LIMITER_FAST_POWER);
    tick(49);
    EXPECT_LE(bus.power.power_w(), 700.0);
    EXPECT_EQ(pm.telemetry().emergency_events, 0u);
    EXPECT_EQ(pm.telemetry().throttle_events, 1u);
}

TEST_F(PowerTest, EmergencyDropsToMinimumAtOnce)
{
    bus.power.full_load_w = 1200;
    start_at(JAL_CLOCK_MAX_MHZ);
    tick();
    EXPECT_EQ(bus.power.clock_mhz, JAL_CLOCK_MIN_MHZ);
    EXPECT_EQ(pm.telemetry().limiter, static_cast<std::uint32_t>(JAL_LIMITER_EMERGENCY));
    EXPECT_EQ(bus.power.timing_violations, 0u);
}

TEST_F(PowerTest, RecoversQuicklyAfterAnEmergency)
{
    // The lagging average must not pin the clock at minimum after the emergency drop.
    start_at(JAL_CLOCK_MAX_MHZ);
    tick();
    ASSERT_EQ(bus.power.clock_mhz, JAL_CLOCK_MIN_MHZ);
    tick(10);
    EXPECT_GE(bus.power.power_w(), 650.0);
    EXPECT_LE(bus.power.power_w(), 700.0);
    EXPECT_EQ(pm.limiter(), JAL_LIMITER_FAST_POWER);
}

TEST_F(PowerTest, LowerPowerLimitTakesEffectAtTheNextTick)
{
    start_at(JAL_CLOCK_MAX_MHZ);
    tick(100);
    ASSERT_EQ(pm.request_power_limit(400000), 0u);
    EXPECT_NE(pm.request_power_limit(100000), 0u);
    tick(100);
    EXPECT_LE(bus.power.power_w(), 400.0);
    EXPECT_EQ(pm.telemetry().power_limit_mw, 400000u);
}

TEST_F(PowerTest, LimitLoweredUnderTheDrawRampsDownWithoutEmergency)
{
    bus.power.full_load_w = 690;  // under the 700 W limit at full clock
    start_at(JAL_CLOCK_MAX_MHZ);
    tick(50);
    ASSERT_GT(bus.power.power_w(), 600.0);
    // 300 W: the draw is more than 5/4 of the new limit, yet nothing surged.
    ASSERT_EQ(pm.request_power_limit(300000), 0u);
    std::uint32_t lowest = JAL_CLOCK_MAX_MHZ;
    for (int i = 0; i < 200; ++i) {
        tick();
        lowest = std::min(lowest, bus.power.clock_mhz);
        EXPECT_NE(pm.telemetry().limiter, static_cast<std::uint32_t>(JAL_LIMITER_EMERGENCY))
            << "tick " << i;
    }
    EXPECT_EQ(pm.telemetry().emergency_events, 0u);
    EXPECT_GT(lowest, JAL_CLOCK_MIN_MHZ) << "the clock ramped, it did not drop to minimum";
    EXPECT_LE(bus.power.power_w(), 300.0);
    EXPECT_GE(bus.power.power_w(), 250.0);
}

TEST_F(PowerTest, ASurgeDuringTheRampIsStillAnEmergency)
{
    bus.power.full_load_w = 690;
    start_at(JAL_CLOCK_MAX_MHZ);
    tick(50);
    ASSERT_EQ(pm.request_power_limit(300000), 0u);
    tick(3);
    bus.power.full_load_w = 3000;  // a real over-current event
    tick(2);
    EXPECT_GE(pm.telemetry().emergency_events, 1u);
}

TEST_F(PowerTest, PersistentLimitIsRetainedAndAppliedAtTheNextStart)
{
    start_at(JAL_CLOCK_MAX_MHZ);
    EXPECT_NE(pm.request_persistent_limit(100000), 0u) << "out of range";
    ASSERT_EQ(pm.request_persistent_limit(450000), 0u);
    EXPECT_EQ(bus.reg(JAL_SYS_RETAIN(JAL_RETAIN_POWER_LIMIT)), 450000u);
    tick();
    EXPECT_EQ(pm.telemetry().power_limit_mw, 450000u);
    EXPECT_EQ(pm.telemetry().power_limit_saved_mw, 450000u);

    // A new boot (the retained register survives the reset): the limit starts in force.
    PowerManager next{slices, journal};
    ASSERT_EQ(next.start(), 0u);
    EXPECT_EQ(next.power_limit(), 450000u);
    EXPECT_EQ(next.persistent_limit(), 450000u);

    ASSERT_EQ(next.request_persistent_limit(0), 0u);
    EXPECT_EQ(bus.reg(JAL_SYS_RETAIN(JAL_RETAIN_POWER_LIMIT)), 0u);
    PowerManager after_clear{slices, journal};
    ASSERT_EQ(after_clear.start(), 0u);
    EXPECT_EQ(after_clear.power_limit(), static_cast<std::uint32_t>(JAL_POWER_TDP_MW));
}

TEST_F(PowerTest, AnImplausibleRetainedLimitIsForgotten)
{
    bus.regs[JAL_SYS_RETAIN(JAL_RETAIN_POWER_LIMIT)] = 5;  // not a limit this firmware saves
    start_at(JAL_CLOCK_MAX_MHZ);
    EXPECT_EQ(pm.power_limit(), static_cast<std::uint32_t>(JAL_POWER_TDP_MW));
    EXPECT_EQ(bus.reg(JAL_SYS_RETAIN(JAL_RETAIN_POWER_LIMIT)), 0u);
}

TEST_F(PowerTest, CurrentLimiterHoldsTheCoreRail)
{
    bus.power.full_load_w = 690;    // under the power limit...
    bus.power.current_scale = 1.5;  // ...but over the current limit at full clock
    start_at(JAL_CLOCK_MAX_MHZ);
    tick(100);
    EXPECT_EQ(pm.limiter(), JAL_LIMITER_CURRENT);
    EXPECT_LE(bus.power.core_current_a() * 1000, JAL_CORE_CURRENT_LIMIT_MA);
}

TEST_F(PowerTest, ThermalLimiterWinsWhenHot)
{
    bus.power.load = 0.1;
    bus.power.temp_mc = 97000;
    start_at(JAL_CLOCK_MAX_MHZ);
    tick(10);
    EXPECT_EQ(pm.limiter(), JAL_LIMITER_THERMAL);
    EXPECT_LT(bus.power.clock_mhz, JAL_CLOCK_MAX_MHZ);
    bus.power.temp_mc = 60000;
    tick(400);
    EXPECT_EQ(pm.limiter(), JAL_LIMITER_NONE);
    EXPECT_EQ(bus.power.clock_mhz, JAL_CLOCK_MAX_MHZ);
}

TEST_F(PowerTest, IdleEnabledSlicesAreGated)
{
    bus.power.load = 0;
    bus.slices.busy = 0x3;
    ASSERT_EQ(slices.release_resets(), 0u);
    ASSERT_EQ(slices.run_bist(), 0u);
    ASSERT_EQ(slices.harvest(), 0u);
    start_at(JAL_CLOCK_MIN_MHZ);
    tick();
    EXPECT_EQ(bus.slices.gate, ~0x3ull);
    EXPECT_EQ(pm.telemetry().slices_powered, 2u);
}

}  // namespace
