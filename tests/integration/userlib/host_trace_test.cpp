// libjal's host trace (jal/trace.h): jal_trace_start/stop from the program, and JAL_TRACE
// from the environment (completed at exit), read back as JSON.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <jal/trace.h>

#include "fixture/run_command.hpp"
#include "runtime_fixture.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json read_json(const fs::path& p)
{
    std::ifstream in(p);
    return json::parse(in);  // throws (failing the test) unless complete JSON
}

fs::path temp(const std::string& name)
{
    return fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".json");
}

class HostTraceTest : public jal::test::RuntimeTest {};

TEST_F(HostTraceTest, CallsAndWaitsAreSpansOnTheirThreadsTrack)
{
    const fs::path file = temp("libjal-host-trace");
    ASSERT_EQ(jal_trace_start(file.c_str()), uint32_t{JAL_STATUS_OK}) << jal_last_error_message();
    {
        jal::runtime::Context ctx(dev());
        jal::runtime::Queue queue(ctx);
        jal::runtime::Signal done(dev(), 1);
        queue.nop(&done);
        EXPECT_TRUE(done.wait_zero().satisfied);
    }
    ASSERT_EQ(jal_trace_stop(), uint32_t{JAL_STATUS_OK});
    const json t = read_json(file);
    fs::remove(file);
    ASSERT_TRUE(t.is_array());
    ASSERT_FALSE(t.empty());
    EXPECT_EQ(t[0]["name"], "clock origin");
    EXPECT_EQ(t[0]["args"]["clock"], "CLOCK_MONOTONIC");
    std::set<std::string> calls;
    double last_end = 0;
    for (const json& e : t) {
        if (e["ph"] != "X") continue;
        EXPECT_EQ(e["pid"], ::getpid());
        EXPECT_EQ(e["tid"], ::gettid()) << "this thread made every call";
        calls.insert(e["name"]);
        if (e["name"] == "jal_signal_wait") {
            EXPECT_EQ(e["cat"], "wait");
            EXPECT_EQ(e["args"]["satisfied"], 1);
        }
        last_end = std::max(last_end, e["ts"].get<double>() + e["dur"].get<double>());
    }
    for (const char* c : {"jal_context_create", "jal_queue_create", "jal_queue_nop",
                          "jal_signal_wait", "jal_queue_destroy", "jal_context_destroy"})
        EXPECT_TRUE(calls.count(c)) << c;
    EXPECT_GT(last_end, 0.0);

    // Nothing is written once stopped; a bad path is a clear error.
    EXPECT_EQ(jal_trace_start("/nonexistent-dir/t.json"), uint32_t{JAL_STATUS_INVALID_FIELD});
    EXPECT_NE(std::string(jal_last_error_message()).find("cannot write the trace"),
              std::string::npos);
}

TEST_F(HostTraceTest, JalTraceInTheEnvironmentTracesAProgramToItsEnd)
{
    const fs::path file = temp("libjal-env-trace");
    auto r = jal::test::run_command({JAL_C_PROGRAM}, {emu().env(), "JAL_TRACE=" + file.string()},
                                    std::chrono::seconds(120));
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const json t = read_json(file);  // completed at exit
    fs::remove(file);
    unsigned dispatches = 0, assembles = 0;
    for (const json& e : t) {
        dispatches += e["ph"] == "X" && e["name"] == "jal_queue_dispatch";
        assembles += e["ph"] == "X" && e["name"] == "jal_kernel_assemble";
    }
    EXPECT_EQ(dispatches, 1u);
    EXPECT_EQ(assembles, 3u);  // the bad text, the kernel, then its listing assembled back
}

}  // namespace
