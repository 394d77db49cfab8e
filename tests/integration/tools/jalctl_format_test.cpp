// jalctl's table layout and JSON views, without a device.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>

#include <jal/hw/events.h>

#include "event_decode.hpp"
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

namespace {

jal_log_event make_event(uint16_t code, std::initializer_list<uint32_t> args)
{
    jal_log_event e{};
    e.code = code;
    size_t i = 0;
    for (uint32_t a : args) e.args[i++] = a;
    return e;
}

}  // namespace

TEST(JalctlEventDecode, NamesEachArgumentOfAKnownEvent)
{
    jal_log_event e = make_event(JAL_EVENT_HBM_CHANNEL_FAILED, {100, 5, JAL_HBM_FAIL_NO_READ_EYE});
    EXPECT_EQ(event_name(e), "hbm_channel_failed");
    EXPECT_EQ(event_fields(e),
              (json{{"channel", 100}, {"dead_lanes", 5}, {"reason", "no_read_eye"}}));
    EXPECT_EQ(event_fields_text(e), "channel=100 dead_lanes=5 reason=no_read_eye");
}

TEST(JalctlEventDecode, UnitsStatusesAndPostCodes)
{
    jal_log_event throttle =
        make_event(JAL_EVENT_THROTTLE_BEGIN, {JAL_LIMITER_THERMAL, 1500, 812500, 700000});
    json f = event_fields(throttle);
    EXPECT_EQ(f["limiter"], "thermal");
    EXPECT_EQ(f["clock_mhz"], 1500);
    EXPECT_EQ(f["power_w"], 812.5);
    EXPECT_EQ(f["limit_w"], 700.0);
    EXPECT_EQ(event_fields_text(throttle),
              "limiter=thermal clock=1500MHz power=812.5W limit=700.0W");

    jal_log_event step = make_event(JAL_EVENT_BOOT_STEP_FAILED, {6, 0x70, JAL_STATUS_HW_FAILED, 0});
    json s = event_fields(step);
    EXPECT_EQ(s["post_code"], "0x0070");
    EXPECT_EQ(s["post_code_step"], "hbm training");
    EXPECT_EQ(s["status"], jal_status_name(JAL_STATUS_HW_FAILED));
    EXPECT_EQ(s["fatal"], false);

    jal_log_event trip = make_event(JAL_EVENT_THERMAL_TRIP, {static_cast<uint32_t>(-5000), 0, 0});
    EXPECT_EQ(event_fields(trip)["junction_c"], -5.0);
}

TEST(JalctlEventDecode, UnknownCodesKeepTheirRawArguments)
{
    jal_log_event e = make_event(0x0777, {0, 9, 0, 0});
    EXPECT_EQ(event_name(e), "0x0777");
    EXPECT_EQ(event_fields(e), (json{{"arg1", 9}}));
    EXPECT_EQ(event_fields_text(e), "arg1=9");
}

TEST(JalctlEventDecode, EveryCodeIsDescribedOnceWithNamedArguments)
{
    for (uint32_t i = 0; i < JAL_EVENT_DESC_COUNT; i++) {
        const jal_event_desc& d = jal_event_descs[i];
        EXPECT_EQ(jal_event_describe(d.code), &d) << d.name;
        for (const auto& a : d.args) EXPECT_EQ(a.name == nullptr, a.kind == JAL_ARG_NONE) << d.name;
    }
    EXPECT_EQ(post_code_text(0x40), "0x0040 (slice reset release)");
    EXPECT_STREQ(jal_post_step_name(0x99), "unknown");
}
