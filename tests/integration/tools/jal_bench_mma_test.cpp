// `jal-bench mma` (tools/jal-bench/mma_bench.hpp): every weight format at the quick shapes,
// with figures that follow from their own definitions (no timing is judged: the machines are
// shared), and the table form.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <set>
#include <string>

#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"

namespace {

using json = nlohmann::json;

TEST(JalBenchMma, PrintsEveryFormatAsJson)
{
    const auto r = jal::test::run_command(
        {jal::test::bin_path("jal-bench"), "mma", "--quick", "--json", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json d = json::parse(r.out);
    EXPECT_TRUE(d["isa"] == "avx512" || d["isa"] == "avx2" || d["isa"] == "scalar") << d["isa"];
    std::set<std::string> pairs;
    std::set<unsigned> ms;
    for (const json& row : d["rows"]) {
        const std::string pair = row["a"].get<std::string>() + "x" + row["b"].get<std::string>();
        pairs.insert(pair);
        ms.insert(row["m"].get<unsigned>());
        const double us = row["us"].get<double>(), gflops = row["gflops"].get<double>();
        ASSERT_GT(us, 0) << pair;
        const double flops =
            2.0 * row["m"].get<double>() * row["n"].get<double>() * row["k"].get<double>();
        EXPECT_NEAR(gflops, flops / us / 1e3, 1e-6 * gflops) << pair;
        EXPECT_NEAR(row["vs_sgemm"].get<double>(), gflops / row["sgemm_gflops"].get<double>(),
                    1e-9 * gflops)
            << pair;
        EXPECT_GT(row["b_gb_s"].get<double>(), 0) << pair;
    }
    EXPECT_EQ(d["rows"].size(), 8u);
    EXPECT_EQ(pairs, (std::set<std::string>{"f32xf32", "f32xbf16", "f32xmxfp4", "q8_0xmxfp4"}));
    EXPECT_EQ(ms, (std::set<unsigned>{1, 64}));
}

TEST(JalBenchMma, PrintsATable)
{
    const auto r =
        jal::test::run_command({jal::test::bin_path("jal-bench"), "mma", "--quick", "-q"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("vs_sgemm"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("q8_0   mxfp4"), std::string::npos) << r.out;
}

}  // namespace
