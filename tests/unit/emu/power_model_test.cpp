#include "emu/chip/power_model.hpp"
#include "jal/hw/mgmt.h"

#include <gtest/gtest.h>

using jal::emu::PowerInputs;
using jal::emu::PowerModel;

namespace {
constexpr std::uint32_t pw(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_POWER;
}
PowerInputs all_busy()
{
    return {64, 1.0};
}
void set_clock(PowerModel& m, std::uint32_t mhz)
{
    m.write(pw(JAL_PWR_VOLTAGE_MV), jal_vf_min_mv(mhz));
    m.write(pw(JAL_PWR_CLOCK_MHZ), mhz);
}
}  // namespace

TEST(PowerModel, LoadWattsIsTheFullClockDrawAtAmbient)
{
    PowerModel m(900, 25);
    set_clock(m, JAL_CLOCK_MAX_MHZ);
    m.step(0.00025, all_busy());
    EXPECT_NEAR(m.power_w(), 900, 15);
    EXPECT_NEAR(m.read(pw(JAL_PWR_POWER_MW)) / 1000.0, m.power_w(), 0.01);
}

TEST(PowerModel, LowerClockAndVoltageDrawLess)
{
    PowerModel m(900, 25);
    set_clock(m, JAL_CLOCK_MAX_MHZ);
    m.step(0.00025, all_busy());
    const double full = m.power_w();
    set_clock(m, 1200);
    m.step(0.00025, all_busy());
    EXPECT_LT(m.power_w(), full * 0.6);
}

TEST(PowerModel, TemperatureApproachesSteadyStateWithTimeConstant)
{
    PowerModel m(600, 40);
    set_clock(m, JAL_CLOCK_MAX_MHZ);
    for (int i = 0; i < 4000; ++i) m.step(0.00025, all_busy());  // 1 s
    const double p = m.power_w();
    EXPECT_NEAR(m.junction_c(), 40 + 0.065 * p, 1.0);
    EXPECT_GT(m.junction_c(), 70);
    EXPECT_EQ(m.read(pw(JAL_PWR_TEMP_AMBIENT_MC)), 40000u);
}

TEST(PowerModel, RailCurrentsFollowPowerOverVoltage)
{
    PowerModel m(700, 25);
    set_clock(m, 1500);
    m.step(0.00025, all_busy());
    double total_w = 0;
    for (std::uint32_t r = 0; r < JAL_RAIL_COUNT; ++r)
        total_w += m.read(pw(JAL_PWR_RAIL_CURRENT_MA(r))) / 1000.0 *
                   m.read(pw(JAL_PWR_RAIL_VOLTAGE_MV(r))) / 1000.0;
    EXPECT_NEAR(total_w, m.power_w(), 1.0);
    EXPECT_EQ(m.read(pw(JAL_PWR_RAIL_VOLTAGE_MV(JAL_RAIL_CORE))), jal_vf_min_mv(1500));
}

TEST(PowerModel, ClockAboveTheVoltageIsATimingViolation)
{
    PowerModel m(0, 25);
    m.write(pw(JAL_PWR_CLOCK_MHZ), JAL_CLOCK_MIN_MHZ);  // clock down first, then voltage
    m.write(pw(JAL_PWR_VOLTAGE_MV), JAL_VOLTAGE_MIN_MV);
    EXPECT_EQ(m.timing_violations(), 0u);
    m.write(pw(JAL_PWR_CLOCK_MHZ), JAL_CLOCK_MAX_MHZ);
    EXPECT_EQ(m.timing_violations(), 1u);
}

TEST(PowerModel, EnergyIntegratesPower)
{
    PowerModel m(0, 25);
    for (int i = 0; i < 4000; ++i) m.step(0.00025, {64, 0});
    const double uj =
        m.read(pw(JAL_PWR_ENERGY_UJ_LO)) + double(m.read(pw(JAL_PWR_ENERGY_UJ_HI))) * 4294967296.0;
    EXPECT_NEAR(uj / 1e6, m.power_w(), m.power_w() * 0.05);  // joules over 1 s ≈ watts
}
