// `jal-bench serve --url` end to end: a private jal-emu, a small synthetic model, jal-serve
// on a free port, and the benchmark's JSON checked for its structure and invariants
// (request and token counts, TTFT <= E2E, ordered percentiles). No timings are asserted.
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fixture/emu_process.hpp>
#include <fixture/run_command.hpp>

#include "serve_process.hpp"

namespace {

using jal::test::bin_path;
using jal::test::CommandResult;
using jal::test::run_command;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr unsigned kInputLen = 8, kOutputLen = 4, kPrompts = 4;

void expect_ordered(const json& d, const std::string& what)
{
    for (const char* k : {"mean", "median", "p90", "p99"})
        EXPECT_GE(d.at(k).get<double>(), 0) << what << " " << k;
    EXPECT_LE(d["median"].get<double>(), d["p90"].get<double>()) << what;
    EXPECT_LE(d["p90"].get<double>(), d["p99"].get<double>()) << what;
}

void check_point(const json& p, unsigned concurrency)
{
    SCOPED_TRACE("concurrency " + std::to_string(concurrency));
    EXPECT_EQ(p["concurrency"], concurrency);
    EXPECT_EQ(p["completed"], kPrompts);
    EXPECT_EQ(p["failed"], 0) << p.dump(2);
    EXPECT_EQ(p["input_tokens"], kPrompts * kInputLen);
    // ignore_eos: every request generates exactly output_len tokens.
    EXPECT_EQ(p["output_tokens"], kPrompts * kOutputLen);
    for (const char* d : {"ttft_ms", "tpot_ms", "itl_ms", "e2e_ms"}) expect_ordered(p[d], d);
    EXPECT_LE(p["ttft_ms"]["p99"].get<double>(), p["e2e_ms"]["p99"].get<double>());
    EXPECT_LE(p["ttft_ms"]["mean"].get<double>(), p["e2e_ms"]["mean"].get<double>());
    EXPECT_GT(p["duration_s"].get<double>(), 0);
    for (const char* k : {"request_throughput", "output_tok_s", "mixed_tok_s", "tok_s_user",
                          "mixed_tok_s_per_kw_rated", "mixed_tok_s_per_kw_modelled"})
        EXPECT_GT(p.at(k).get<double>(), 0) << k;
    EXPECT_GT(p["mixed_tok_s"].get<double>(), p["output_tok_s"].get<double>());
    EXPECT_DOUBLE_EQ(p["mixed_tok_s_per_kw_rated"].get<double>(),
                     p["mixed_tok_s"].get<double>() / 0.7);
    // jal-serve exports the chip's modelled time and energy: this point's share is positive
    // and its average power at least the static 125 W.
    ASSERT_TRUE(p["chip"].is_object()) << p.dump(2);
    EXPECT_GT(p["chip"]["modelled_s"].get<double>(), 0);
    EXPECT_GE(p["chip"]["avg_power_w"].get<double>(), 125.0);
}

TEST(JalBenchServe, JsonAgainstALiveServer)
{
    jal::test::EmuOptions eo;
    eo.extra_args = {"--fw", "native"};
    jal::test::EmuProcess emu(eo);
    const fs::path dir =
        fs::temp_directory_path() / ("jal-bench-serve-test-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    const std::string model = (dir / "bench-test.gguf").string();
    const CommandResult mk = run_command({bin_path("jal-mkmodel"), "--seed", "3", "-q", model});
    ASSERT_EQ(mk.exit_code, 0) << mk.err;
    {
        jal::test::ServeProcess server(bin_path("jal-serve"),
                                       {model, "--emu-dir", emu.socket_dir()});
        const CommandResult r = run_command(
            {bin_path("jal-bench"), "serve", "--url", server.url(), "--concurrency", "1,2",
             "--input-len", std::to_string(kInputLen), "--output-len", std::to_string(kOutputLen),
             "--num-prompts", std::to_string(kPrompts), "--json"});
        ASSERT_EQ(r.exit_code, 0) << r.err << server.output();
        const json doc = json::parse(r.out);
        EXPECT_EQ(doc["target"]["kind"], "server");
        EXPECT_EQ(doc["target"]["time_base"], "wall");
        EXPECT_EQ(doc["workload"]["input_len"], kInputLen);
        EXPECT_EQ(doc["workload"]["output_len"], kOutputLen);
        EXPECT_EQ(doc["workload"]["ignore_eos"], true);
        ASSERT_EQ(doc["points"].size(), 2u);
        check_point(doc["points"][0], 1);
        check_point(doc["points"][1], 2);
        EXPECT_EQ(server.stop(SIGTERM), "") << server.output();
    }
    EXPECT_EQ(emu.stop(), "");
    fs::remove_all(dir);
}

}  // namespace
