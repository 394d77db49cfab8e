// `jal-bench memory` (tools/jal-bench/memory_bench.hpp): one row for one thread and one for
// all, the figures' units, the table form, and bad sizes refused with a message (no timing
// is judged: the machines are shared).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"

namespace {

using json = nlohmann::json;

TEST(JalBenchMemory, PrintsOneRowAThreadCountAsJson)
{
    const auto r = jal::test::run_command({jal::test::bin_path("jal-bench"), "memory", "--bytes",
                                           "4000000", "--ring", "1048576", "--piece", "65536",
                                           "--threads", "2", "--quick", "--json", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json d = json::parse(r.out);
    EXPECT_EQ(d["bytes"], 4000000u / 64 * 64);  // whole cache lines
    EXPECT_EQ(d["ring"], 1048576u);
    EXPECT_EQ(d["piece"], 65536u);
    ASSERT_EQ(d["rows"].size(), 2u);
    EXPECT_EQ(d["rows"][0]["threads"], 1u);
    EXPECT_EQ(d["rows"][1]["threads"], 2u);
    for (const json& row : d["rows"]) {
        EXPECT_GT(row["read_gb_s"].get<double>(), 0) << row;
        EXPECT_GT(row["copy_gb_s"].get<double>(), 0) << row;
    }
}

TEST(JalBenchMemory, OneThreadIsOneRow)
{
    const auto r = jal::test::run_command({jal::test::bin_path("jal-bench"), "memory", "--bytes",
                                           "1000000", "--threads", "1", "--quick", "--json", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(json::parse(r.out)["rows"].size(), 1u) << r.out;
}

TEST(JalBenchMemory, PrintsATable)
{
    const auto r = jal::test::run_command(
        {jal::test::bin_path("jal-bench"), "memory", "--bytes", "1000000", "--quick", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("copy GB/s"), std::string::npos) << r.out;
}

TEST(JalBenchMemory, RefusesARingSmallerThanAPiece)
{
    const auto r = jal::test::run_command({jal::test::bin_path("jal-bench"), "memory", "--ring",
                                           "4096", "--piece", "65536", "--quick", "-q"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--ring >= --piece"), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "");
}

}  // namespace
