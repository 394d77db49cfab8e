// jalctl's table layout and JSON views, without a device.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include "json_views.hpp"
#include "table.hpp"

namespace {

using namespace jal::ctl;

TEST(JalctlTable, AlignsColumnsAndTrimsTrailingBlanks)
{
    Table t({{"A", Table::Align::right}, {"NAME"}, {"X"}});
    t.add_row({"1", "slice", ""});
    t.add_row({"100", "s", "y"});
    std::ostringstream out;
    t.print(out);
    EXPECT_EQ(out.str(), "  A  NAME   X\n"
                         "  1  slice\n"
                         "100  s      y\n");
    EXPECT_THROW(t.add_row({"1", "2", "3", "4"}), std::logic_error);
}

TEST(JalctlTable, MultibyteUnitsDoNotBreakAlignment)
{
    Table t({{"T"}, {"V"}});
    t.add_row({"°C", "1"});
    t.add_row({"ab", "2"});
    std::ostringstream out;
    t.print(out);
    EXPECT_EQ(out.str(), "T   V\n°C  1\nab  2\n");
}

TEST(JalctlKeyValue, AlignsValues)
{
    KeyValueList kv;
    kv.add("State", "ready");
    kv.add("Power limit", "550 W");
    std::ostringstream out;
    kv.print(out);
    EXPECT_EQ(out.str(), "State:        ready\nPower limit:  550 W\n");
}

TEST(JalctlJson, TelemetryInNaturalUnits)
{
    jal_telemetry t{};
    t.power_mw = 412345;
    t.temp_junction_mc = 65432;
    t.clock_mhz = 1800;
    t.limiter = JAL_LIMITER_THERMAL;
    t.rail_voltage_mv[JAL_RAIL_CORE] = 850;
    t.energy_uj = 2500000;
    json j = telemetry_json(t);
    EXPECT_DOUBLE_EQ(j["power_w"].get<double>(), 412.345);
    EXPECT_DOUBLE_EQ(j["temp_c"].get<double>(), 65.432);
    EXPECT_EQ(j["clock_mhz"], 1800);
    EXPECT_EQ(j["limiter"], "thermal");
    EXPECT_DOUBLE_EQ(j["rails"]["core"]["voltage_v"].get<double>(), 0.85);
    EXPECT_DOUBLE_EQ(j["energy_j"].get<double>(), 2.5);
    EXPECT_EQ(telemetry_json(jal_telemetry{})["limiter"], "none");
}

TEST(JalctlJson, IdentifyFields)
{
    jal_identify id{};
    std::strcpy(id.model, "Jalapeno");
    id.fw_version = 0x000100;
    id.slices_enabled = 61;
    id.slices_enabled_mask = 0xfffffeffffffddf7ull;
    id.hbm_bytes_usable = 1ull << 40;
    id.power_limit_mw = 550000;
    json j = identify_json(id);
    EXPECT_EQ(j["model"], "Jalapeno");
    EXPECT_EQ(j["firmware_version"], "0.1.0");
    EXPECT_EQ(j["slices_enabled"], 61);
    EXPECT_EQ(j["slices_enabled_mask"], "0xfffffeffffffddf7");
    EXPECT_EQ(j["hbm_bytes"], 1ull << 40);
    EXPECT_DOUBLE_EQ(j["power_limit_w"].get<double>(), 550.0);
}

TEST(JalctlJson, DeviceStringsStopAtTheirArray)
{
    char unterminated[4] = {'a', 'b', 'c', 'd'};
    EXPECT_EQ(device_string(unterminated), "abcd");
}

TEST(JalctlJson, SliceMapMarksHarvestedSlices)
{
    jal_slice_map map{};
    map.num_slices = 64;
    map.slices[3].state = JAL_SLICE_FUSED;
    map.slices[3].logical_id = 0xff;
    map.slices[4].logical_id = 3;
    json j = slice_map_json(map);
    EXPECT_EQ(j["slices"].size(), 64u);
    EXPECT_EQ(j["slices"][3]["state"], "fused");
    EXPECT_TRUE(j["slices"][3]["logical_id"].is_null());
    EXPECT_EQ(j["slices"][4]["logical_id"], 3);
}

}  // namespace
