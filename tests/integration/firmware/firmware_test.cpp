// The firmware's "done means" through the whole stack: jal-emu running the Cortex-M7 image
// on Unicorn (its default), libjal and jalctl as a host sees them, and the emulator's
// bring-up console for the truth the firmware never sees (the PHY's real eyes).
//
// ctest runs every TEST in a process of its own, so each TEST starts the emulators it needs
// and checks everything that one configuration can show. Times asserted on are modelled
// (telemetry timestamps), never wall-clock.
#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fixture/emu_process.hpp>
#include <fixture/run_command.hpp>
#include <jal/chip_function.hpp>
#include <jal/hw/admin.h>
#include <jal/hw/chip.h>
#include <jal/hw/mgmt.h>
#include <jal/hw/telemetry.h>

#include "console_client.hpp"

namespace {

using namespace std::chrono_literals;
using jal::test::EmuOptions;
using jal::test::EmuProcess;
using nlohmann::json;

// Firmware event codes (firmware/host/event_codes.hpp; docs/device-interface.md 8.5).
constexpr uint16_t kEvSliceTooFew = 0x0201;
constexpr uint16_t kEvSliceNoMemory = 0x0202;
constexpr uint16_t kEvHbmChannelFailed = 0x0300;
constexpr uint16_t kEvHbmChannelRepaired = 0x0301;
constexpr uint16_t kEvHbmStackFailed = 0x0302;
constexpr uint16_t kEvAdminHang = 0x0504;
constexpr uint16_t kEvWatchdogRecovery = 0x0600;

// Boot table steps (docs/firmware.md).
constexpr uint32_t kStepPowerStart = 8;

// Power regulation tolerance the tests allow (docs/firmware.md, "Limits"): the limiters
// regulate to a guard band 1/128 below each limit, so sampled package power sits under the
// limit; 1 % above it is what we accept from one tick's leakage creep.
constexpr double kPowerTolerance = 1.01;
// Junction temperature tolerance under the thermal limiter, m°C.
constexpr int32_t kThermalToleranceMc = 500;

jal::ChipFunction open_ready(EmuProcess& emu, jal::OpenOptions options)
{
    jal::ChipFunction dev = jal::ChipFunction::open(0, options);
    const jal::DeviceStatus s = dev.wait_ready(jal::test::kBootTimeout);
    EXPECT_TRUE(s.state == jal::DeviceState::ready || s.state == jal::DeviceState::failed)
        << "device is " << jal::state_name(s.state) << "\n"
        << emu.output();
    return dev;
}

jal::ChipFunction open_ready(EmuProcess& emu)
{
    return open_ready(emu, emu.open_options());
}

std::string console_path(const EmuProcess& emu)
{
    return emu.socket_dir() + "/jal0.console";
}

jal::test::CommandResult jalctl(const EmuProcess& emu, std::vector<std::string> args)
{
    args.insert(args.begin(), jal::test::bin_path("jalctl"));
    return jal::test::run_command(args, {emu.env()});
}

json jalctl_json(const EmuProcess& emu, std::vector<std::string> args)
{
    args.insert(args.begin(), "--json");
    const auto r = jalctl(emu, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out);
}

bool has_event(const jal::EventLog& log, uint16_t code, std::optional<uint32_t> arg0 = {})
{
    return std::any_of(log.events.begin(), log.events.end(), [&](const jal_log_event& e) {
        return e.code == code && (!arg0 || e.args[0] == *arg0);
    });
}

constexpr uint64_t kTotalBytes = uint64_t{JAL_HBM_CHANNELS} * JAL_HBM_CHANNEL_BYTES;

// ------------------------------------------------------------------ seed-driven skews

// For every channel: the PHY (the console's truth) holds the delays the firmware reports,
// and every lane carrying data sits inside its true read and write eye at the trained Vref.
// Appends a fingerprint of the trained delays to `fingerprint`.
void check_every_channel(EmuProcess& emu, jal::ChipFunction& dev, std::vector<int>& fingerprint)
{
    const jal::HbmReport report = dev.hbm_report(0, JAL_HBM_CHANNELS);
    EXPECT_EQ(report.header.channels_ok, JAL_HBM_CHANNELS);
    EXPECT_EQ(report.channels.size(), size_t{JAL_HBM_CHANNELS});
    fwtest::ConsoleClient console(console_path(emu));
    int lanes_checked = 0;
    for (uint32_t ch = 0; ch < JAL_HBM_CHANNELS && ch < report.channels.size(); ch++) {
        const json phy = console.ask("phy " + std::to_string(ch));
        ASSERT_TRUE(phy.contains("lanes")) << phy.dump();
        const jal_hbm_channel_report& r = report.channels[ch];
        EXPECT_EQ(r.status, JAL_HBM_CH_OK) << "channel " << ch;
        EXPECT_TRUE(phy["enabled"].get<bool>()) << "channel " << ch;
        EXPECT_EQ(phy["vref"].get<int>(), r.vref) << "channel " << ch;
        // Two steps off the optimum the eyes are a tap narrower on each side: the widest-eye
        // rule lands on the optimum or a neighbour with eyes as wide.
        EXPECT_LE(std::abs(phy["vref"].get<int>() - phy["vref_opt"].get<int>()), 1)
            << "channel " << ch;
        for (uint32_t dq = 0; dq < JAL_HBM_DQ_LANES; dq++) {
            const int lane = phy["carriers"][dq].get<int>();
            const json& l = phy["lanes"][lane];
            ASSERT_FALSE(l["dead"].get<bool>()) << "channel " << ch << " lane " << lane;
            ASSERT_FALSE(l["read_eye"].is_null()) << "channel " << ch << " lane " << lane;
            ASSERT_FALSE(l["write_eye"].is_null()) << "channel " << ch << " lane " << lane;
            const int rd = l["read_delay"].get<int>(), wr = l["write_delay"].get<int>();
            EXPECT_GE(rd, l["read_eye"][0].get<int>()) << "channel " << ch << " lane " << lane;
            EXPECT_LE(rd, l["read_eye"][1].get<int>()) << "channel " << ch << " lane " << lane;
            EXPECT_GE(wr, l["write_eye"][0].get<int>()) << "channel " << ch << " lane " << lane;
            EXPECT_LE(wr, l["write_eye"][1].get<int>()) << "channel " << ch << " lane " << lane;
            // What the firmware reports is what the PHY holds.
            EXPECT_EQ(r.lanes[lane].read_delay, rd) << "channel " << ch << " lane " << lane;
            EXPECT_EQ(r.lanes[lane].write_delay, wr) << "channel " << ch << " lane " << lane;
            EXPECT_GT(r.lanes[lane].read_margin, 0) << "channel " << ch << " lane " << lane;
            fingerprint.push_back(rd);
            lanes_checked++;
        }
    }
    EXPECT_EQ(lanes_checked, int{JAL_HBM_CHANNELS * JAL_HBM_DQ_LANES});
}

TEST(FirmwareHbm, TrainedDelaysLieInsideThePhysTrueEyesForTwoSeeds)
{
    std::vector<std::vector<int>> fingerprints;
    for (const uint64_t seed : {7ull, 20260417ull}) {
        SCOPED_TRACE("seed " + std::to_string(seed));
        EmuOptions o;
        o.seed = seed;
        EmuProcess emu(o);
        jal::ChipFunction dev = open_ready(emu);
        fingerprints.emplace_back();
        check_every_channel(emu, dev, fingerprints.back());
        EXPECT_EQ(emu.stop(), "");
    }
    // Different silicon, different trained delays: the firmware found them, not assumed them.
    ASSERT_EQ(fingerprints.size(), 2u);
    size_t differ = 0;
    for (size_t i = 0; i < std::min(fingerprints[0].size(), fingerprints[1].size()); i++)
        differ += fingerprints[0][i] != fingerprints[1][i];
    EXPECT_GT(differ, fingerprints[0].size() / 2);
}

// ------------------------------------------------------------------ lane repair

TEST(FirmwareHbm, DeadLanesWithinSparesAreRepairedBeyondSparesTheChannelFails)
{
    EmuOptions o;
    // Channel 10: 2 dead DQ lanes; channel 50: 4 (every spare); channel 100: 5 (one too many).
    o.bad_lanes = "10:3,10:40,50:1,50:20,50:33,50:63,100:0,100:1,100:2,100:3,100:4";
    EmuProcess emu(o);
    jal::ChipFunction dev = open_ready(emu);

    const jal::HbmReport report = dev.hbm_report(0, JAL_HBM_CHANNELS);
    ASSERT_EQ(report.channels.size(), size_t{JAL_HBM_CHANNELS});
    EXPECT_EQ(report.header.channels_ok, JAL_HBM_CHANNELS - 1);
    EXPECT_EQ(report.header.channels_failed, 1u);
    EXPECT_EQ(report.header.stacks_failed_mask, 0u);
    const auto &c10 = report.channels[10], &c50 = report.channels[50], &c100 = report.channels[100];
    EXPECT_EQ(c10.status, JAL_HBM_CH_REPAIRED);
    EXPECT_EQ(c10.dead_lanes, 2);
    EXPECT_EQ(c10.repair[0], 3);
    EXPECT_EQ(c10.repair[1], 40);
    EXPECT_EQ(c10.repair[2], 0xff);
    EXPECT_EQ(c50.status, JAL_HBM_CH_REPAIRED);
    EXPECT_EQ(c50.dead_lanes, 4);
    EXPECT_EQ((std::vector<int>{c50.repair[0], c50.repair[1], c50.repair[2], c50.repair[3]}),
              (std::vector<int>{1, 20, 33, 63}));
    EXPECT_EQ(c100.status, JAL_HBM_CH_FAILED);
    EXPECT_EQ(c100.dead_lanes, 5);
    for (uint32_t ch = 0; ch < JAL_HBM_CHANNELS; ch++) {
        if (ch != 10 && ch != 50 && ch != 100) {
            EXPECT_EQ(report.channels[ch].status, JAL_HBM_CH_OK) << "channel " << ch;
        }
    }
    EXPECT_TRUE(c10.lanes[3].flags & JAL_HBM_LANE_DEAD);
    EXPECT_TRUE(c10.lanes[64].flags & JAL_HBM_LANE_IN_USE);

    // Repaired channels keep their capacity; the failed one's 1.125 GiB is gone.
    const jal_identify id = dev.identify();
    EXPECT_EQ(id.hbm_channels_ok, JAL_HBM_CHANNELS - 1);
    EXPECT_EQ(id.hbm_bytes_total, kTotalBytes);
    EXPECT_EQ(id.hbm_bytes_usable, kTotalBytes - JAL_HBM_CHANNEL_BYTES);
    EXPECT_EQ(id.slices_enabled, JAL_NUM_SLICES);
    EXPECT_TRUE(dev.status().degraded);
    // The slice owning channel 100 keeps running on its other two channels.
    const jal_slice_map map = dev.slice_map();
    const uint32_t slice = jal_slice_of_channel(100);
    EXPECT_EQ(map.slices[slice].state, JAL_SLICE_ENABLED);
    EXPECT_EQ(map.slices[slice].channels_ok, 2);
    EXPECT_EQ(map.slices[jal_slice_of_channel(10)].channels_ok, 3);

    // The PHY agrees: spares carry the dead lanes, the failed channel is out of service.
    fwtest::ConsoleClient console(console_path(emu));
    const json p10 = console.ask("phy 10"), p100 = console.ask("phy 100");
    EXPECT_EQ(p10["carriers"][3].get<int>(), 64);
    EXPECT_EQ(p10["carriers"][40].get<int>(), 65);
    EXPECT_TRUE(p10["enabled"].get<bool>());
    for (const int spare : {64, 65}) {
        const json& l = p10["lanes"][spare];
        EXPECT_GE(l["read_delay"].get<int>(), l["read_eye"][0].get<int>());
        EXPECT_LE(l["read_delay"].get<int>(), l["read_eye"][1].get<int>());
        EXPECT_GE(l["write_delay"].get<int>(), l["write_eye"][0].get<int>());
        EXPECT_LE(l["write_delay"].get<int>(), l["write_eye"][1].get<int>());
    }
    EXPECT_FALSE(p100["enabled"].get<bool>());

    // The event log and jalctl tell the same story.
    const jal::EventLog log = dev.event_log();
    EXPECT_TRUE(has_event(log, kEvHbmChannelRepaired, 10));
    EXPECT_TRUE(has_event(log, kEvHbmChannelRepaired, 50));
    EXPECT_TRUE(has_event(log, kEvHbmChannelFailed, 100));
    const json hbm = jalctl_json(emu, {"hbm"});
    EXPECT_EQ(hbm["channels_ok"].get<int>(), 191);
    EXPECT_EQ(hbm["channels"][10]["status"], "repaired");
    EXPECT_EQ(hbm["channels"][50]["status"], "repaired");
    EXPECT_EQ(hbm["channels"][100]["status"], "failed");
    const json info = jalctl_json(emu, {"info"});
    EXPECT_EQ(info["hbm_channels_ok"].get<int>(), 191);
    EXPECT_EQ(info["hbm_bytes"].get<uint64_t>(), kTotalBytes - JAL_HBM_CHANNEL_BYTES);
    EXPECT_EQ(emu.stop(), "");
}

TEST(FirmwareHbm, TooManyFailedChannelsFailTheStackAndTheProductRuleFailsTheChip)
{
    // Five channels of stack 2 (channels 64..95) with five dead DQ lanes each: more than
    // JAL_HBM_FAILED_CHANNELS_PER_STACK_MAX (4) failed channels retire the whole stack. Its
    // 32 channels are the only memory of slices 22..31, so those ten slices go too, and 54
    // slices are fewer than the product's 56: the chip reports FAILED (and still answers).
    EmuOptions o;
    for (const int ch : {64, 70, 75, 80, 90})
        for (int lane = 0; lane < 5; lane++)
            o.bad_lanes +=
                (o.bad_lanes.empty() ? "" : ",") + std::to_string(ch) + ":" + std::to_string(lane);
    EmuProcess emu(o);
    jal::ChipFunction dev = open_ready(emu);
    const jal::DeviceStatus s = dev.status();
    EXPECT_EQ(s.state, jal::DeviceState::failed);
    EXPECT_EQ(s.fault, JAL_STATUS_HW_FAILED);

    const jal::HbmReport report = dev.hbm_report(0, JAL_HBM_CHANNELS);
    EXPECT_EQ(report.header.stacks_failed_mask, 1u << 2);
    EXPECT_EQ(report.header.channels_failed, JAL_HBM_CHANNELS_PER_STACK);
    EXPECT_EQ(report.header.channels_ok, JAL_HBM_CHANNELS - JAL_HBM_CHANNELS_PER_STACK);
    for (uint32_t ch = 64; ch < 96; ch++)
        EXPECT_EQ(report.channels[ch].status, JAL_HBM_CH_FAILED) << "channel " << ch;
    EXPECT_EQ(report.channels[63].status, JAL_HBM_CH_OK);
    EXPECT_EQ(report.channels[96].status, JAL_HBM_CH_OK);

    const jal_slice_map map = dev.slice_map();
    for (uint32_t slice = 22; slice <= 31; slice++)
        EXPECT_EQ(map.slices[slice].state, JAL_SLICE_NO_MEMORY) << "slice " << slice;
    EXPECT_EQ(map.slices[21].state, JAL_SLICE_ENABLED) << "slice 21 keeps channel 63";
    EXPECT_EQ(map.num_enabled, 54u);
    const jal_identify id = dev.identify();
    EXPECT_EQ(id.state, static_cast<uint32_t>(JAL_CHIP_STATE_FAILED));
    EXPECT_EQ(id.hbm_channels_ok, JAL_HBM_CHANNELS - JAL_HBM_CHANNELS_PER_STACK);

    const jal::EventLog log = dev.event_log();
    EXPECT_TRUE(has_event(log, kEvHbmStackFailed, 2));
    EXPECT_TRUE(has_event(log, kEvSliceNoMemory, 22));
    EXPECT_TRUE(has_event(log, kEvSliceTooFew));
    fwtest::ConsoleClient console(console_path(emu));
    EXPECT_FALSE(console.ask("phy 66")["enabled"].get<bool>())
        << "a healthy channel of a retired stack";
    EXPECT_EQ(emu.stop(), "");
}

// ------------------------------------------------------------------ bring-up console

TEST(FirmwareConsole, AnswersWithNamesMasksAsListsAndRegistersByName)
{
    EmuOptions o;
    o.fuse_slices = "3,17";
    EmuProcess emu(o);
    jal::ChipFunction dev = open_ready(emu);
    fwtest::ConsoleClient console(console_path(emu));

    const json status = console.ask("status");
    EXPECT_EQ(status["status"], json::array({"ready", "degraded"})) << status.dump();
    EXPECT_EQ(status["post_step"], "ready");
    EXPECT_EQ(status["reset_cause"], "power_on");
    EXPECT_TRUE(status["fault"].is_null());

    const json slices = console.ask("slices");
    EXPECT_EQ(slices["enabled"]["count"], 62);
    EXPECT_EQ(slices["enabled"]["hex"], "0xfffffffffffdfff7");
    const json& bits = slices["enabled"]["bits"];
    EXPECT_EQ(std::count(bits.begin(), bits.end(), json(3)), 0);
    EXPECT_EQ(std::count(bits.begin(), bits.end(), json(4)), 1);

    const json post = console.ask("reg POST_CODE");
    EXPECT_EQ(post["offset"], "0x0028");
    EXPECT_EQ(post["value"], "0x000000a0");
    EXPECT_EQ(post["decoded"], "ready");
    EXPECT_EQ(console.ask("reg status")["decoded"], json::array({"ready", "degraded"}));
    const json poked = console.ask("reg SCRATCH1 0x1234");
    EXPECT_EQ(poked["written"], true);
    EXPECT_EQ(console.ask("reg 0x304")["value"], "0x00001234") << "SCRATCH1 by offset";
    const json bad = console.ask("reg NO_SUCH");
    EXPECT_EQ(bad["ok"], false);
    EXPECT_NE(bad["error"].get<std::string>().find("POST_CODE"), std::string::npos)
        << "lists the names";
    EXPECT_EQ(emu.stop(), "");
}

// ------------------------------------------------------------------ power and thermal

struct Sample {
    uint64_t t_us;
    uint32_t power_mw, limit_mw, limiter, clock_mhz;
    int32_t junction_mc;
};

// Samples telemetry until its modelled timestamp reaches `until_us` (bounded in wall time).
std::vector<Sample> sample_until(jal::ChipFunction& dev, uint64_t until_us)
{
    std::vector<Sample> out;
    const auto give_up = std::chrono::steady_clock::now() + 60s;
    uint32_t last_seq = ~0u;
    while (std::chrono::steady_clock::now() < give_up) {
        const jal_telemetry t = dev.telemetry();
        if (t.seq != last_seq)
            out.push_back({t.timestamp_us, t.power_mw, t.power_limit_mw, t.limiter, t.clock_mhz,
                           t.temp_junction_mc});
        last_seq = t.seq;
        if (t.timestamp_us >= until_us) break;
        std::this_thread::sleep_for(2ms);
    }
    return out;
}

bool is_power_limiter(uint32_t l)
{
    return l == JAL_LIMITER_FAST_POWER || l == JAL_LIMITER_SLOW_POWER;
}

TEST(FirmwarePower, PackagePowerIsHeldUnderTheLimitAndFollowsANewLimit)
{
    // --speed 0.2: idle modelled time runs at a fifth of the wall clock, so telemetry can be
    // sampled every couple of modelled ms from the moment the power manager starts.
    EmuOptions o;
    o.extra_args = {"--load-watts", "900", "--speed", "0.2"};
    EmuProcess emu(o);
    jal::ChipFunction dev = open_ready(emu);
    const jal::PostTrail trail = dev.post_trail();
    ASSERT_GT(trail.entries.size(), kStepPowerStart);
    const uint64_t start_us = trail.entries[kStepPowerStart].timestamp_us;

    // 900 W of load at full clock against the 700 W limit.
    const std::vector<Sample> first = sample_until(dev, start_us + 250'000);
    ASSERT_FALSE(first.empty());
    int late = 0;
    for (const Sample& s : first) {
        if (s.t_us < start_us + 50'000) continue;
        late++;
        EXPECT_LE(s.power_mw, JAL_POWER_TDP_MW * kPowerTolerance)
            << "at " << s.t_us - start_us << " us";
        EXPECT_TRUE(is_power_limiter(s.limiter))
            << jal_limiter_name(static_cast<jal_limiter>(s.limiter));
        EXPECT_LT(s.clock_mhz, JAL_CLOCK_MAX_MHZ);
    }
    EXPECT_GT(late, 10) << "samples from 50 ms after the power manager started";
    EXPECT_GE(first.back().power_mw, JAL_POWER_TDP_MW * 0.95) << "throttled no further than needed";

    // The host lowers the limit with jalctl; it takes effect at the next 1 ms tick and the
    // package settles under it.
    const auto set = jalctl(emu, {"power", "set", "400"});
    ASSERT_EQ(set.exit_code, 0) << set.out << set.err;
    const uint64_t set_us = dev.telemetry().timestamp_us;
    const std::vector<Sample> after = sample_until(dev, set_us + 300'000);
    int settled = 0;
    for (const Sample& s : after) {
        if (s.t_us >= set_us + 2'000) {
            EXPECT_EQ(s.limit_mw, 400'000u) << "in force from the next tick";
        }
        if (s.t_us < set_us + 50'000) continue;
        settled++;
        EXPECT_LE(s.power_mw, 400'000 * kPowerTolerance)
            << "at " << s.t_us - set_us << " us after the set";
        EXPECT_TRUE(is_power_limiter(s.limiter))
            << jal_limiter_name(static_cast<jal_limiter>(s.limiter));
    }
    EXPECT_GT(settled, 10);
    EXPECT_GE(after.back().power_mw, 400'000 * 0.9);
    EXPECT_EQ(dev.power_limit_mw(), 400'000u);
    const json power = jalctl_json(emu, {"power"});
    EXPECT_DOUBLE_EQ(power["power_limit_w"].get<double>(), 400.0) << power.dump();
    EXPECT_EQ(emu.stop(), "");
}

TEST(FirmwarePower, AHotInletMakesTheThermalLimiterWin)
{
    // 70 °C inlet: the 90 °C junction limit allows about 300 W, well under the 700 W limit.
    EmuOptions o;
    o.extra_args = {"--load-watts", "900", "--ambient-c", "70"};
    EmuProcess emu(o);
    jal::ChipFunction dev = open_ready(emu);
    const jal::PostTrail trail = dev.post_trail();
    ASSERT_GT(trail.entries.size(), kStepPowerStart);
    const uint64_t start_us = trail.entries[kStepPowerStart].timestamp_us;

    const std::vector<Sample> samples = sample_until(dev, start_us + 1'500'000);
    ASSERT_FALSE(samples.empty());
    int thermal = 0, late = 0;
    for (const Sample& s : samples) {
        if (s.t_us < start_us + 1'000'000) continue;
        late++;
        thermal += s.limiter == JAL_LIMITER_THERMAL;
        EXPECT_LE(s.junction_mc, JAL_TEMP_LIMIT_MC + kThermalToleranceMc);
        EXPECT_LT(s.power_mw, JAL_POWER_TDP_MW * 0.6)
            << "held by temperature, far below the power limit";
    }
    EXPECT_GT(late, 5);
    EXPECT_EQ(thermal, late) << "the thermal limiter holds the clock once the die is hot";
    const jal_telemetry t = dev.telemetry();
    EXPECT_GT(t.limiter_residency_ms[JAL_LIMITER_THERMAL],
              t.limiter_residency_ms[JAL_LIMITER_FAST_POWER]);
    EXPECT_GT(t.temp_junction_mc, JAL_TEMP_LIMIT_MC - 5000)
        << "regulated near the limit, not far below";
    const json tel = jalctl_json(emu, {"telemetry"});
    EXPECT_EQ(tel["limiter"], "thermal");
    EXPECT_EQ(emu.stop(), "");
}

// ------------------------------------------------------------------ watchdog

TEST(FirmwareWatchdog, AHungMainLoopIsCaughtByTheWatchdogAndTheChipRecovers)
{
    EmuProcess emu;
    jal::OpenOptions options = emu.open_options();
    options.admin_timeout = 3s;
    jal::ChipFunction dev = open_ready(emu, options);
    const jal_identify before = dev.identify();
    EXPECT_EQ(before.boot_count, 1u);
    EXPECT_EQ(dev.telemetry().watchdog_resets, 0u);

    jal_admin_sqe hang{};
    hang.opcode = JAL_ADMIN_DEBUG_FAULT;
    hang.cdw[0] = JAL_DEBUG_FAULT_HANG_MAIN_LOOP;
    const jal::RawAdminResult r = dev.admin_execute_raw(hang);
    EXPECT_EQ(r.completion.status, JAL_STATUS_OK) << "DEBUG_FAULT completes before the hang";

    // The firmware stops feeding its 50 ms watchdog; the watchdog resets the management core,
    // which boots again (HBM training and all). The library re-enables its admin queue after
    // the reset disabled it; commands may fail while that happens.
    std::optional<jal_identify> after;
    std::vector<std::string> errors;  // what the library said while the chip rebooted
    const auto give_up = std::chrono::steady_clock::now() + jal::test::kBootTimeout;
    while (!after && std::chrono::steady_clock::now() < give_up) {
        try {
            dev.wait_ready(jal::test::kBootTimeout);
            const jal_identify id = dev.identify();
            if (id.boot_count > before.boot_count) after = id;
        } catch (const jal::Error& e) {
            errors.push_back(e.what());
        }
        if (!after) std::this_thread::sleep_for(50ms);
    }
    ASSERT_TRUE(after) << "the chip did not boot again\n" << emu.output();
    // Typically one: the IDENTIFY submitted while the firmware was hung is lost with the
    // old queue and times out; the next command runs on the re-enabled queue.
    RecordProperty("recovery_errors", static_cast<int>(errors.size()));
    EXPECT_LE(errors.size(), 3u);
    EXPECT_EQ(after->boot_count, before.boot_count + 1);
    EXPECT_EQ(after->state, static_cast<uint32_t>(JAL_CHIP_STATE_READY));
    EXPECT_EQ(after->hbm_channels_ok, JAL_HBM_CHANNELS);

    // Counted, logged, and the same Device keeps working.
    const jal_telemetry t = dev.telemetry();
    EXPECT_EQ(t.watchdog_resets, 1u);
    const jal::EventLog log = dev.event_log();
    EXPECT_TRUE(has_event(log, kEvWatchdogRecovery, after->boot_count));
    // The previous boot's last events are kept (the retained log): the hang comes before
    // the recovery, so the log says what led to it.
    const auto hung = std::find_if(log.events.begin(), log.events.end(),
                                   [](const jal_log_event& e) { return e.code == kEvAdminHang; });
    const auto recovery =
        std::find_if(log.events.begin(), log.events.end(),
                     [](const jal_log_event& e) { return e.code == kEvWatchdogRecovery; });
    ASSERT_NE(hung, log.events.end()) << "the hung boot's events are gone";
    ASSERT_NE(recovery, log.events.end());
    EXPECT_LT(hung->seq, recovery->seq);
    EXPECT_EQ(dev.post_trail().entries.size(), 11u);
    EXPECT_EQ(dev.set_power_limit_mw(500'000), 500'000u);
    EXPECT_EQ(dev.power_limit_mw(), 500'000u);
    fwtest::ConsoleClient console(console_path(emu));
    const json status = console.ask("status");
    EXPECT_EQ(status["boot_count"].get<int>(), 2);
    EXPECT_EQ(status["reset_cause"], "watchdog");
    EXPECT_EQ(status["reset_cause_code"].get<int>(), 2) << "JAL_RESET_CAUSE_WATCHDOG";
    const json log_text = jalctl_json(emu, {"log"});
    EXPECT_NE(log_text.dump().find("watchdog recovery"), std::string::npos) << log_text.dump();
    EXPECT_EQ(emu.stop(), "");
}

}  // namespace
