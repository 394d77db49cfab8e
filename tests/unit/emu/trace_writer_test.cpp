// TraceWriter (jal-emu --trace): what several threads write is one complete JSON array,
// every event whole, names escaped; nothing is written after close.
#include "emu/trace/trace_writer.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <set>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using jal::emu::TraceWriter;

fs::path temp_file(const char* name)
{
    return fs::temp_directory_path() / (std::string(name) + "-" + std::to_string(::getpid()));
}

TEST(TraceWriter, ThreadsWriteOneCompleteArray)
{
    const fs::path path = temp_file("trace-writer");
    {
        TraceWriter w(path.string());
        w.name_process(1, "chip 0: \"slices\"\n", 0);
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; t++)
            threads.emplace_back([&w, t] {
                for (int i = 0; i < 500; i++) w.complete(1, t, "span", "test", i, 1.0, {{"i", i}});
            });
        for (auto& th : threads) th.join();
        w.close();
        w.instant(1, 0, "late", "test", 0);  // dropped
    }
    std::ifstream in(path);
    const nlohmann::json t = nlohmann::json::parse(in);
    fs::remove(path);
    ASSERT_TRUE(t.is_array());
    EXPECT_EQ(t.size(), 3u + 4 * 500);
    // First, where the wall clock's zero is on CLOCK_MONOTONIC (for lining up host traces).
    EXPECT_EQ(t[0]["name"], "clock origin");
    EXPECT_GT(t[0]["args"]["monotonic_us"].get<double>(), 0.0);
    std::set<std::pair<int, int>> seen;
    for (const auto& e : t) {
        if (e["ph"] != "X") continue;
        EXPECT_EQ(e["dur"], 1.0);
        seen.insert({e["tid"].get<int>(), e["args"]["i"].get<int>()});
    }
    EXPECT_EQ(seen.size(), 4u * 500) << "every event once, whole";
    EXPECT_EQ(t[1]["args"]["name"], "chip 0: \"slices\"\n");
}

TEST(TraceWriter, AnUnwritablePathIsAClearError)
{
    try {
        TraceWriter w("/nonexistent-dir/trace.json");
        FAIL() << "no exception";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot write the trace /nonexistent-dir/trace.json"),
                  std::string::npos)
            << e.what();
    }
}

}  // namespace
