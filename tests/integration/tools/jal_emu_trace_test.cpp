// jal-emu --trace (docs/bringup.md, "Traces"), through jal-run --trace: a short timing-only
// run of the GPT-OSS-120B shape on the jal-emu jal-run starts, its trace read back with a
// JSON parser and checked against what jal-run reports: every dispatch on each of its
// slices in modelled time, the stages inside, the queue's packets, the admin queue's
// commands and the firmware's log.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fixture/emu_process.hpp>
#include <fixture/run_command.hpp>

namespace {

namespace fs = std::filesystem;
using jal::test::bin_path;
using jal::test::run_command;
using nlohmann::json;

constexpr double kLaunchUs = 1.5;  // the command processor's start and retire

// "slice 08 dma": how jal-emu names slice s's op tracks.
std::string fmt_track(int s, const char* track)
{
    return std::string("slice ") + (s < 10 ? "0" : "") + std::to_string(s) + " " + track;
}

class JalEmuTrace : public ::testing::Test {
protected:
    void SetUp() override
    {
        dir_ = fs::temp_directory_path() / ("jal-trace-test-" + std::to_string(::getpid()));
        fs::create_directories(dir_);
    }
    void TearDown() override { fs::remove_all(dir_); }

    // jal-run --timing-only ... --trace FILE --json [--trace-ops OPS], then the trace parsed.
    void run_traced(const std::string& ops = "")
    {
        const fs::path file = dir_ / "run.json";
        std::vector<std::string> cmd = {
            bin_path("jal-run"), "--timing-only", "--prompt-len", "16", "--n", "3", "--json",
            "--trace",           file.string()};
        if (!ops.empty()) cmd.insert(cmd.end(), {"--trace-ops", ops});
        const auto r = run_command(cmd, {"JAL_EMU_DIR="}, std::chrono::seconds(240));
        ASSERT_EQ(r.exit_code, 0) << r.err;
        report_ = json::parse(r.out);
        std::ifstream in(file);
        ASSERT_TRUE(in) << "no trace at " << file;
        trace_ = json::parse(in);  // throws, failing the test, unless complete JSON
        ASSERT_TRUE(trace_.is_array());
    }

    // The pid of the process the trace names `name`, or -1.
    int pid_named(const std::string& name) const
    {
        for (const json& e : trace_)
            if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == name)
                return e["pid"];
        return -1;
    }

    fs::path dir_;
    json report_, trace_;
};

TEST_F(JalEmuTrace, HoldsEveryDispatchOnItsSlicesInModelledTimeWithItsStages)
{
    run_traced();
    if (HasFatalFailure()) return;
    const int modelled = pid_named("chip 0: slices (modelled time)");
    const int wall = pid_named("chip 0: queues and firmware (wall clock)");
    ASSERT_GE(modelled, 0);
    ASSERT_GE(wall, 0);

    // Dispatches: a span per slice, all starting at the dispatch's start. A dispatch lasts
    // its launch plus its slowest slice, which is what it reported.
    struct Dispatch {
        double modelled_ns = 0, longest_us = 0;
        std::set<int> slices;
        std::uint64_t instructions = 0, slice_instructions = 0;  // reported; summed by slice
    };
    std::map<double, Dispatch> dispatches;                        // by start
    std::map<int, std::vector<std::pair<double, double>>> spans;  // slice -> [ts, end)
    unsigned stages = 0;
    for (const json& e : trace_) {
        if (e["ph"] != "X" || e["pid"] != modelled || e["cat"] != "dispatch" ||
            e["name"] == "launch")
            continue;
        Dispatch& d = dispatches[e["ts"].get<double>()];
        d.modelled_ns = e["args"]["modelled_ns"];
        d.instructions = e["args"]["instructions"];
        d.slice_instructions += e["args"]["slice_instructions"].get<std::uint64_t>();
        d.longest_us = std::max(d.longest_us, e["dur"].get<double>());
        EXPECT_TRUE(d.slices.insert(e["tid"].get<int>()).second) << "a slice twice: " << e;
        EXPECT_DOUBLE_EQ(e["dur"].get<double>(),
                         kLaunchUs + e["args"]["slice_end_ns"].get<double>() / 1000.0);
        spans[e["tid"]].push_back({e["ts"], e["ts"].get<double>() + e["dur"].get<double>()});
    }
    ASSERT_FALSE(dispatches.empty());
    double total_ns = 0, previous_end = 0;
    std::uint64_t instructions = 0;
    for (const auto& [start, d] : dispatches) {
        EXPECT_NEAR(d.longest_us * 1000.0, d.modelled_ns, 1.0) << "dispatch at " << start;
        EXPECT_EQ(d.instructions, d.slice_instructions) << "dispatch at " << start;
        EXPECT_GE(d.slice_instructions, d.slices.size()) << "every slice runs its END at least";
        instructions += d.slice_instructions;
        EXPECT_EQ(d.slices.size(), 64u) << "every slice of the chip takes part";
        EXPECT_GE(start + 1e-6, previous_end) << "one dispatch at a time on the same slices";
        previous_end = start + d.modelled_ns / 1000.0;
        total_ns += d.modelled_ns;
    }
    EXPECT_EQ(dispatches.size(), report_["chip"]["dispatches"].get<size_t>());
    EXPECT_NEAR(total_ns, report_["chip"]["modelled_ns"].get<double>(), dispatches.size());
    // The instructions jal-run reports (libjal's sum of the dispatch reports) are the ones the
    // slices executed, as the emulator's trace counts them slice by slice.
    EXPECT_EQ(instructions, report_["chip"]["instructions"].get<std::uint64_t>());

    // Stages lie inside their slice's dispatch (the staged programs of a pass).
    for (const json& e : trace_) {
        if (e["ph"] != "X" || e["pid"] != modelled || e["cat"] != "stage") continue;
        ++stages;
        const double ts = e["ts"], end = ts + e["dur"].get<double>();
        bool inside = false;
        for (const auto& [a, b] : spans[e["tid"]]) inside = inside || (ts >= a && end <= b + 1e-3);
        EXPECT_TRUE(inside) << e;
    }
    EXPECT_GT(stages, dispatches.size() * 64) << "a staged pass has many stages a slice";

    // Wall clock: the dispatch packets on a queue's track, the copies (the weights and code
    // objects going up) with their sizes, and the firmware's boot log.
    unsigned packets = 0, firmware = 0, uploads = 0;
    for (const json& e : trace_) {
        if (e["pid"] != wall) continue;
        if (e["ph"] == "X" && e["cat"] == "packet" && e["name"] == "DISPATCH") ++packets;
        if (e["ph"] == "X" && e["cat"] == "packet" && e["name"] == "COPY") {
            EXPECT_GT(e["args"]["bytes"].get<std::uint64_t>(), 0u) << e;
            const std::string dir = e["args"]["direction"];
            EXPECT_TRUE(dir == "H2D" || dir == "D2H" || dir == "D2D") << e;
            uploads += dir == "H2D";
        }
        if (e["ph"] == "i" && e["cat"] == "firmware") ++firmware;
    }
    EXPECT_EQ(packets, dispatches.size());
    EXPECT_GT(uploads, 0u);
    EXPECT_GT(firmware, 0u);
}

// The admin queue's commands on the `admin` track of the wall-clock process: opening the
// device (IDENTIFY), its context and queue, each named, with its function and status.
TEST_F(JalEmuTrace, HoldsTheAdminQueuesCommandsByName)
{
    run_traced();
    if (HasFatalFailure()) return;
    const int wall = pid_named("chip 0: queues and firmware (wall clock)");
    ASSERT_GE(wall, 0);
    int admin = -1;
    for (const json& e : trace_)
        if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == wall &&
            e["args"]["name"] == "admin")
            admin = e["tid"];
    ASSERT_NE(admin, -1) << "no admin track";

    std::multiset<std::string> names;
    std::set<int> functions;
    for (const json& e : trace_) {
        if (e.value("cat", std::string()) != "admin") continue;  // metadata events have none
        EXPECT_EQ(e["ph"], "X") << e;
        EXPECT_EQ(e["pid"], wall) << e;
        EXPECT_EQ(e["tid"], admin) << e;
        EXPECT_GE(e["dur"].get<double>(), 0.0) << e;
        EXPECT_EQ(e["args"]["status"], "ok") << "jal-run's commands all succeed: " << e;
        EXPECT_TRUE(e["args"].contains("cid")) << e;
        functions.insert(e["args"]["function"].get<int>());
        names.insert(e["name"].get<std::string>());
    }
    EXPECT_GE(names.count("IDENTIFY"), 1u);
    EXPECT_GE(names.count("CREATE_CONTEXT"), 1u);
    EXPECT_GE(names.count("CREATE_QUEUE"), 1u);
    EXPECT_GE(names.count("ALLOC_MEMORY"), 1u);
    for (const std::string& n : names)
        EXPECT_EQ(n.rfind("opcode ", 0), std::string::npos) << "an unnamed command: " << n;
    EXPECT_EQ(functions.size(), 1u) << "jal-run is one client: one host function";
}

// libjal's host spans (jal/trace.h), merged in by jal-run: the API calls and waits of
// jal-run on its own process, on jal-emu's wall clock. The clocks agree if every dispatch
// packet the device ran started after the host's call that submitted it had begun.
TEST_F(JalEmuTrace, HostCallsAndWaitsShareTheDevicesWallClock)
{
    run_traced();
    EXPECT_FALSE(fs::exists(dir_ / "run.json.host.json"))
        << "the host trace is merged, then removed";
    int host = -1;
    for (const json& e : trace_)
        if (e["ph"] == "M" && e["name"] == "process_name" &&
            e["args"]["name"].get<std::string>().rfind("libjal: jal-run", 0) == 0)
            host = e["pid"];
    ASSERT_NE(host, -1) << "no libjal process in the trace";
    const int wall = pid_named("chip 0: queues and firmware (wall clock)");
    std::vector<double> submitted, started;
    unsigned waits = 0, opens = 0;
    for (const json& e : trace_) {
        if (e["ph"] != "X") continue;
        if (e["pid"] == host && e["name"] == "jal_queue_dispatch") submitted.push_back(e["ts"]);
        if (e["pid"] == host && e["cat"] == "wait") ++waits;
        if (e["pid"] == host && e["name"] == "jal_device_open") ++opens;
        if (e["pid"] == wall && e["name"] == "DISPATCH") started.push_back(e["ts"]);
    }
    EXPECT_EQ(opens, 1u);
    EXPECT_GT(waits, 0u);
    ASSERT_EQ(submitted.size(), started.size());
    ASSERT_FALSE(started.empty());
    std::sort(submitted.begin(), submitted.end());
    std::sort(started.begin(), started.end());
    for (size_t i = 0; i < started.size(); ++i)
        EXPECT_LE(submitted[i], started[i]) << "dispatch " << i << " ran before it was submitted";
}

// --trace-ops: the engine ops and scalar stalls of the slices named (0 and 8 here), on
// tracks of their own ("slice 00 dma", ...), each named by its instruction, inside its
// slice's dispatch; no other slice has any.
TEST_F(JalEmuTrace, HoldsTheEngineOpsOfTheSlicesItNames)
{
    run_traced("0,8");
    if (HasFatalFailure()) return;
    const int modelled = pid_named("chip 0: slices (modelled time)");
    ASSERT_GE(modelled, 0);
    const char* tracks[] = {"stalls", "dma", "matrix", "vector", "network"};
    std::map<int, std::pair<int, int>> track_of;  // tid -> (slice, track)
    for (const json& e : trace_)
        if (e["ph"] == "M" && e["name"] == "thread_name" && e["pid"] == modelled)
            for (int s : {0, 1, 8})
                for (int k = 0; k < 5; k++)
                    if (e["args"]["name"] == fmt_track(s, tracks[k])) track_of[e["tid"]] = {s, k};
    EXPECT_EQ(track_of.size(), 10u) << "five tracks for each of slices 0 and 8, none for 1";
    std::map<int, std::vector<std::pair<double, double>>> spans;  // slice -> its dispatches
    for (const json& e : trace_)
        if (e["ph"] == "X" && e["pid"] == modelled && e["cat"] == "dispatch" &&
            e["name"] != "launch")
            spans[e["tid"]].push_back({e["ts"], e["ts"].get<double>() + e["dur"].get<double>()});
    std::map<int, unsigned> per_track;
    for (const json& e : trace_) {
        if (e["ph"] != "X" || e["cat"] != "op") continue;
        ASSERT_TRUE(track_of.count(e["tid"])) << "an op on no named track: " << e;
        const auto [slice, track] = track_of[e["tid"]];
        EXPECT_NE(slice, 1) << e;
        const std::string name = e["name"];
        if (track == 1) {
            EXPECT_TRUE(name == "tload" || name == "tstore" || name == "tgather") << e;
        } else if (track == 2) {
            EXPECT_EQ(name, "mma") << e;
        } else if (track == 3) {
            EXPECT_EQ(name[0], 'v') << e;
        }
        EXPECT_GT(e["dur"].get<double>(), 0.0) << e;
        EXPECT_GE(e["args"]["pc"].get<int>(), 0) << e;
        const double ts = e["ts"], end = ts + e["dur"].get<double>();
        bool inside = false;
        for (const auto& [a, b] : spans[slice]) inside = inside || (ts >= a && end <= b + 1e-3);
        EXPECT_TRUE(inside) << "outside slice " << slice << "'s dispatches: " << e;
        ++per_track[track];
    }
    for (int k : {0, 1, 2, 3}) EXPECT_GT(per_track[k], 0u) << tracks[k];
}

TEST_F(JalEmuTrace, OpsNeedATrace)
{
    const auto r =
        run_command({bin_path("jal-emu"), "--socket-dir", dir_.string(), "--trace-ops", "0"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("--trace-ops needs --trace FILE"), std::string::npos) << r.err;
}

TEST_F(JalEmuTrace, NeedsTheEmulatorJalRunStarts)
{
    const auto r = run_command({bin_path("jal-run"), "--timing-only", "--n", "1", "--trace",
                                (dir_ / "t.json").string(), "--emu-dir", dir_.string()});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("--trace: the trace is written by the jal-emu jal-run starts"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "t.json"));
}

}  // namespace
