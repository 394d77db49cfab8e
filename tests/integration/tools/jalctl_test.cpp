// The jalctl binary against a real jal-emu (and against none).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"

namespace {

using jal::test::CommandResult;
using jal::test::EmuOptions;
using jal::test::EmuTest;
using nlohmann::json;

constexpr uint64_t kGiB = 1ull << 30;
const std::string kBootWait = std::to_string(jal::test::kBootTimeout.count());

class JalctlTest : public EmuTest {
protected:
    CommandResult jalctl(std::vector<std::string> args)
    {
        args.insert(args.begin(), jal::test::bin_path("jalctl"));
        return jal::test::run_command(args, {emu().env()});
    }

    // Runs jalctl with --json and returns the one document it printed.
    json jalctl_json(std::vector<std::string> args)
    {
        args.push_back("--json");
        CommandResult r = jalctl(args);
        EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
        try {
            return json::parse(r.out);
        } catch (const json::parse_error& e) {
            ADD_FAILURE() << "not one JSON document: " << e.what() << "\n" << r.out;
            return json();
        }
    }
};

TEST_F(JalctlTest, InfoJsonDescribesAFullChip)
{
    json info = jalctl_json({"info", "--wait", kBootWait});
    EXPECT_EQ(info["state"], "ready");
    EXPECT_EQ(info["slices_enabled"], 64);
    EXPECT_EQ(info["slices_total"], 64);
    EXPECT_EQ(info["hbm_bytes"], 216 * kGiB);
    EXPECT_EQ(info["hbm_channels_ok"], 192);
    EXPECT_TRUE(info["power_limit_w"].is_number());
    EXPECT_TRUE(info["firmware_version"].is_string());
    std::string fw = info["firmware_version"];
    EXPECT_EQ(std::count(fw.begin(), fw.end(), '.'), 2) << fw;
    EXPECT_EQ(info["degraded"], false);
    for (const char* key : {"model", "serial", "interface_version", "hbm_channels_total",
                            "hbm_bytes_total", "clock_min_mhz", "clock_max_mhz"})
        EXPECT_TRUE(info.contains(key)) << key;
}

TEST_F(JalctlTest, EverySubcommandPrintsOneJsonDocument)
{
    // Let the device boot first so every command sees the same state.
    jalctl_json({"info", "--wait", kBootWait});
    for (std::vector<std::string> args :
         std::vector<std::vector<std::string>>{{"list"},
                                               {"info"},
                                               {"slices"},
                                               {"hbm"},
                                               {"hbm", "--channel", "5"},
                                               {"telemetry"},
                                               {"power"},
                                               {"power", "get"},
                                               {"power", "set", "450"},
                                               {"log"},
                                               {"log", "--post"},
                                               {"ps"},
                                               {"ps", "--all-slices"},
                                               {"reset", "--timeout", kBootWait}}) {
        std::string name;
        for (const auto& a : args) name += a + " ";
        SCOPED_TRACE(name);
        json doc = jalctl_json(args);
        EXPECT_TRUE(doc.is_object());
        EXPECT_FALSE(doc.contains("error"));
    }
}

TEST_F(JalctlTest, JsonFieldsOfEachView)
{
    jalctl_json({"info", "--wait", kBootWait});
    json t = jalctl_json({"telemetry"});
    for (const char* key : {"power_w", "temp_c", "clock_mhz", "limiter"})
        EXPECT_TRUE(t.contains(key)) << key;
    EXPECT_TRUE(t["limiter"].is_string());
    EXPECT_GT(t["power_w"].get<double>(), 0);

    json s = jalctl_json({"slices"});
    ASSERT_EQ(s["slices"].size(), 64u);
    EXPECT_EQ(s["slices"][0]["state"], "enabled");

    json h = jalctl_json({"hbm"});
    ASSERT_EQ(h["channels"].size(), 192u);
    EXPECT_EQ(h["channels_ok"], 192);
    json lanes = jalctl_json({"hbm", "--channel", "7"});
    EXPECT_EQ(lanes["lanes"].size(), 68u);

    json set = jalctl_json({"power", "set", "420"});
    EXPECT_EQ(set["power_limit_w"], 420.0);
    EXPECT_EQ(jalctl_json({"power", "get"})["power_limit_w"], 420.0);

    json log = jalctl_json({"log"});
    EXPECT_FALSE(log["events"].empty());
    json post = jalctl_json({"log", "--post"});
    EXPECT_FALSE(post["entries"].empty());

    json list = jalctl_json({"list"});
    ASSERT_EQ(list["devices"].size(), 1u);
    EXPECT_EQ(list["devices"][0]["state"], "ready");

    json reset = jalctl_json({"reset", "--timeout", kBootWait});
    EXPECT_EQ(reset["came_back"], true);
    EXPECT_EQ(reset["state"], "ready");
}

TEST_F(JalctlTest, TelemetryWatchPrintsOneDocumentPerLine)
{
    jalctl_json({"info", "--wait", kBootWait});
    CommandResult r = jalctl({"telemetry", "--watch", "0.2", "--count", "3", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream lines(r.out);
    std::string line;
    int n = 0;
    while (std::getline(lines, line)) {
        EXPECT_NO_THROW(json::parse(line)) << line;
        n++;
    }
    EXPECT_EQ(n, 3);
}

TEST_F(JalctlTest, HumanOutputIsTabular)
{
    jalctl_json({"info", "--wait", kBootWait});
    CommandResult info = jalctl({"info"});
    EXPECT_EQ(info.exit_code, 0) << info.err;
    EXPECT_NE(info.out.find("64 of 64 enabled"), std::string::npos) << info.out;
    CommandResult slices = jalctl({"slices"});
    EXPECT_EQ(slices.exit_code, 0) << slices.err;
    EXPECT_EQ(slices.out.rfind("PHYS  LOGICAL", 0), 0u) << slices.out;
    for (std::vector<std::string> args : std::vector<std::vector<std::string>>{{"list"},
                                                                               {"hbm"},
                                                                               {"hbm", "-c", "0"},
                                                                               {"telemetry"},
                                                                               {"power", "get"},
                                                                               {"log"},
                                                                               {"log", "--post"}}) {
        CommandResult r = jalctl(args);
        EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
        EXPECT_FALSE(r.out.empty()) << args[0];
    }
}

TEST_F(JalctlTest, ResetPrintsProgressAndTheOutcome)
{
    jalctl_json({"info", "--wait", kBootWait});
    CommandResult r = jalctl({"reset", "--timeout", kBootWait});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("resetting"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("reset complete"), std::string::npos) << r.out;
}

TEST_F(JalctlTest, PowerLimitOutsideTheRangeIsRefused)
{
    jalctl_json({"info", "--wait", kBootWait});
    CommandResult r = jalctl({"power", "set", "5000"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("outside the allowed"), std::string::npos) << r.err;
}

TEST_F(JalctlTest, UnknownDeviceIndexFailsClearly)
{
    CommandResult r = jalctl({"info", "-d", "5"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("device 5: no emulator socket"), std::string::npos) << r.err;
}

class HarvestedJalctlTest : public JalctlTest {
    EmuOptions emu_options() const override
    {
        EmuOptions o;
        o.fuse_slices = "3,17";
        o.fail_slices = "40";
        return o;
    }
};

TEST_F(HarvestedJalctlTest, InfoCountsOnlyGoodSlices)
{
    json info = jalctl_json({"info", "--wait", kBootWait});
    EXPECT_EQ(info["slices_enabled"], 61);
    EXPECT_EQ(info["degraded"], true);
    json slices = jalctl_json({"slices"});
    EXPECT_EQ(slices["slices"][3]["state"], "fused");
    EXPECT_EQ(slices["slices"][40]["state"], "failed_bist");
    EXPECT_TRUE(slices["slices"][40]["logical_id"].is_null());
}

// No emulator at all: every subcommand fails with a hint and a nonzero status.
TEST(JalctlWithoutEmulator, FailsClearly)
{
    auto empty =
        std::filesystem::temp_directory_path() / ("jal-none-" + std::to_string(::getpid()));
    std::filesystem::create_directories(empty);
    std::vector<std::string> env = {"JAL_EMU_DIR=" + empty.string()};
    for (std::vector<std::string> args : std::vector<std::vector<std::string>>{{"list"},
                                                                               {"info"},
                                                                               {"slices"},
                                                                               {"hbm"},
                                                                               {"telemetry"},
                                                                               {"power", "get"},
                                                                               {"log"},
                                                                               {"reset"}}) {
        args.insert(args.begin(), jal::test::bin_path("jalctl"));
        CommandResult r = jal::test::run_command(args, env);
        EXPECT_EQ(r.exit_code, 1) << args[1];
        EXPECT_NE(r.err.find("is jal-emu running?"), std::string::npos) << args[1] << ": " << r.err;

        args.push_back("--json");
        r = jal::test::run_command(args, env);
        EXPECT_EQ(r.exit_code, 1) << args[1];
        EXPECT_NO_THROW(json::parse(r.out)) << args[1] << ": " << r.out;
    }
    std::filesystem::remove_all(empty);
}

TEST(JalctlWithoutEmulator, HelpWorksEverywhere)
{
    for (std::vector<std::string> args :
         std::vector<std::vector<std::string>>{{"--help"},
                                               {"list", "--help"},
                                               {"info", "--help"},
                                               {"slices", "--help"},
                                               {"hbm", "--help"},
                                               {"telemetry", "--help"},
                                               {"power", "--help"},
                                               {"power", "set", "--help"},
                                               {"log", "--help"},
                                               {"reset", "--help"},
                                               {"ps", "--help"},
                                               {"dmon", "--help"}}) {
        args.insert(args.begin(), jal::test::bin_path("jalctl"));
        CommandResult r = jal::test::run_command(args);
        EXPECT_EQ(r.exit_code, 0) << args[1];
        EXPECT_NE(r.out.find("Usage"), std::string::npos) << args[1];
    }
    CommandResult bad = jal::test::run_command({jal::test::bin_path("jalctl"), "frobnicate"});
    EXPECT_EQ(bad.exit_code, 2);
}

// jalctl health's exit status says what a monitoring script needs: 0 healthy, 4 degraded,
// 5 failed; the JSON names the check that decided it.
TEST_F(JalctlTest, HealthOfAFullChipIsHealthy)
{
    CommandResult r = jalctl({"health", "--wait", kBootWait, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    const json doc = json::parse(r.out);
    EXPECT_EQ(doc["health"], "healthy");
    EXPECT_EQ(doc["exit_code"], 0);
    ASSERT_EQ(doc["checks"].size(), 4u) << doc.dump();
    for (const json& c : doc["checks"]) EXPECT_EQ(c["status"], "healthy") << c.dump();
    r = jalctl({"health"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("device 0: healthy"), std::string::npos) << r.out;
}

class JalctlHealthTest : public JalctlTest {
protected:
    // Channel 100 with five dead DQ lanes (one more than its spares) fails: the chip
    // boots, degraded. With five such channels on stack 2 the stack is retired and the
    // product rule fails the chip (FirmwareHbm tests).
    static std::string dead_lanes(std::initializer_list<unsigned> channels)
    {
        std::string lanes;
        for (unsigned ch : channels)
            for (unsigned lane = 0; lane < 5; lane++)
                lanes +=
                    (lanes.empty() ? "" : ",") + std::to_string(ch) + ":" + std::to_string(lane);
        return lanes;
    }
};

class JalctlHealthDegradedTest : public JalctlHealthTest {
protected:
    EmuOptions emu_options() const override
    {
        EmuOptions o;
        o.bad_lanes = dead_lanes({100});
        return o;
    }
};

TEST_F(JalctlHealthDegradedTest, AFailedChannelIsDegraded)
{
    CommandResult r = jalctl({"health", "--wait", kBootWait, "--json"});
    EXPECT_EQ(r.exit_code, 4) << r.err << r.out;
    const json doc = json::parse(r.out);
    EXPECT_EQ(doc["health"], "degraded");
    bool hbm = false;
    for (const json& c : doc["checks"])
        if (c["check"] == "hbm") {
            hbm = true;
            EXPECT_EQ(c["status"], "degraded");
            EXPECT_EQ(c["detail"], "191 of 192 channels ok");
        }
    EXPECT_TRUE(hbm) << doc.dump();
}

class JalctlHealthFailedTest : public JalctlHealthTest {
protected:
    EmuOptions emu_options() const override
    {
        EmuOptions o;
        o.bad_lanes = dead_lanes({64, 65, 66, 67, 68});
        return o;
    }
};

TEST_F(JalctlHealthFailedTest, AFailedChipIsFailed)
{
    CommandResult r = jalctl({"health", "--wait", kBootWait, "--json"});
    EXPECT_EQ(r.exit_code, 5) << r.err << r.out;
    const json doc = json::parse(r.out);
    EXPECT_EQ(doc["health"], "failed");
    ASSERT_FALSE(doc["checks"].empty());
    EXPECT_EQ(doc["checks"][0]["check"], "state");
    EXPECT_EQ(doc["checks"][0]["status"], "failed");
    EXPECT_NE(doc["checks"][0]["detail"].get<std::string>().find("failed: "), std::string::npos)
        << doc.dump();
}

}  // namespace
