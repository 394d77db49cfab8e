// jal-run --timing-only reports the InferenceX figures (docs/performance.md, "InferenceX
// methodology") in its JSON and its summary, consistent with each other. A short run of
// the GPT-OSS-120B shape (16-token prompt, 3 measured tokens projected to 32, two users)
// on a private jal-emu: a few seconds. No timings are asserted, only relations between
// the reported figures.
#include <cmath>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fixture/emu_process.hpp>
#include <fixture/run_command.hpp>

namespace {

using jal::test::bin_path;
using jal::test::CommandResult;
using jal::test::run_command;
using nlohmann::json;

constexpr unsigned kPrompt = 16, kOut = 32, kUsers = 2, kMeasured = 3;

class JalRunInferenceX : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        jal::test::EmuOptions eo;
        eo.extra_args = {"--fw", "native"};
        emu_ = new jal::test::EmuProcess(eo);
    }
    static void TearDownTestSuite()
    {
        EXPECT_EQ(emu_->stop(), "");
        delete emu_;
        emu_ = nullptr;
    }
    static CommandResult run(std::vector<std::string> extra)
    {
        std::vector<std::string> argv = {bin_path("jal-run"),
                                         "--timing-only",
                                         "--prompt-len",
                                         std::to_string(kPrompt),
                                         "--n",
                                         std::to_string(kMeasured),
                                         "--project-out",
                                         std::to_string(kOut),
                                         "--concurrency",
                                         std::to_string(kUsers)};
        argv.insert(argv.end(), extra.begin(), extra.end());
        return run_command(argv, {emu_->env()}, std::chrono::seconds(240));
    }
    static jal::test::EmuProcess* emu_;
};
jal::test::EmuProcess* JalRunInferenceX::emu_ = nullptr;

// |a − b| within `rel` of |b| (the JSON carries doubles; the figures are derived from
// integer nanoseconds and nanojoules, so only rounding separates them).
void expect_near_rel(double a, double b, const char* what, double rel = 1e-9)
{
    EXPECT_NEAR(a, b, rel * std::abs(b) + 1e-12) << what;
}

TEST_F(JalRunInferenceX, JsonFieldsArePresentAndConsistent)
{
    const CommandResult r = run({"--json"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const json j = json::parse(r.out);
    std::istringstream fields(
        "ttft_ms tpot_ms e2e_ms e2e_s tok_s_user serve_s tok_s output_tok_s mixed_tok_s "
        "avg_power_w tok_s_per_kw rated_power_w mixed_tok_s_per_kw_rated "
        "mixed_tok_s_per_kw_modelled decode_min_bytes decode_roofline_tb_s decode_roofline_ms "
        "decode_roofline_fraction dispatches_per_step prefill_dispatches instructions_per_step "
        "prefill_instructions prompt_tokens "
        "out_tokens");
    for (std::string key; fields >> key;)
        ASSERT_TRUE(j.contains(key) && j[key].is_number()) << key << "\n" << r.out;

    EXPECT_EQ(j["prompt_tokens"], kPrompt);
    EXPECT_EQ(j["out_tokens"], kOut);
    EXPECT_EQ(j["concurrency"], kUsers);
    const double ttft = j["ttft_ms"], tpot = j["tpot_ms"], C = kUsers;
    ASSERT_GT(ttft, 0);
    ASSERT_GT(tpot, 0);
    expect_near_rel(j["e2e_s"], (ttft + (kOut - 1) * tpot) / 1e3, "e2e_s = TTFT + (out-1) TPOT");
    expect_near_rel(j["e2e_s"], j["e2e_ms"].get<double>() / 1e3, "e2e_s = e2e_ms / 1000");
    expect_near_rel(j["tok_s_user"], 1000 / tpot, "tok_s_user = 1000 / TPOT");
    const double serve = j["serve_s"];
    expect_near_rel(serve, (C * ttft + (kOut - 1) * tpot) / 1e3, "serve_s");
    expect_near_rel(j["output_tok_s"], C * kOut / serve, "output_tok_s");
    expect_near_rel(j["tok_s"], j["output_tok_s"], "tok_s = output_tok_s");
    const double mixed = j["mixed_tok_s"];
    expect_near_rel(mixed, C * (kPrompt + kOut) / serve, "mixed_tok_s");
    EXPECT_EQ(j["rated_power_w"], 700.0);
    expect_near_rel(j["mixed_tok_s_per_kw_rated"], mixed / 0.7, "per kW rated");
    const double kw = j["avg_power_w"].get<double>() / 1e3;
    EXPECT_GT(kw, j["static_power_w"].get<double>() / 1e3);
    expect_near_rel(j["mixed_tok_s_per_kw_modelled"], mixed / kw, "per kW modelled");
    expect_near_rel(j["tok_s_per_kw"], j["output_tok_s"].get<double>() / kw, "tok_s_per_kw");
}

TEST_F(JalRunInferenceX, RooflineAndDispatchesAreConsistent)
{
    const CommandResult r = run({"--json"});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    const json j = json::parse(r.out);
    // Every slice of the chip: 64 × 240 GB/s.
    EXPECT_EQ(j["slices"], 64);
    expect_near_rel(j["decode_roofline_tb_s"], 15.36, "chip bandwidth");
    const double roofline_ms = j["decode_min_bytes"].get<double>() / 15.36e12 * 1e3;
    expect_near_rel(j["decode_roofline_ms"], roofline_ms, "roofline time");
    expect_near_rel(j["decode_roofline_fraction"], roofline_ms / j["tpot_ms"].get<double>(),
                    "roofline fraction = roofline time / TPOT");
    EXPECT_GT(j["decode_roofline_fraction"].get<double>(), 0);
    EXPECT_LE(j["decode_roofline_fraction"].get<double>(), 1);
    // Timing only, one prompt is prefilled (the other user assumes its length), then the
    // measured decode steps: the chip's dispatch count is exactly theirs.
    const double per_step = j["dispatches_per_step"];
    EXPECT_GE(per_step, 1);
    EXPECT_EQ(j["chip"]["dispatches"].get<double>(),
              j["prefill_dispatches"].get<double>() + (kMeasured - 1) * per_step);
    // The same for the slices' instructions: every dispatch runs at least one on every slice
    // of the chip.
    const double insn_per_step = j["instructions_per_step"];
    EXPECT_GE(insn_per_step, 64 * per_step);
    EXPECT_GE(j["prefill_instructions"].get<double>(), 64 * j["prefill_dispatches"].get<double>());
    expect_near_rel(j["chip"]["instructions"].get<double>(),
                    j["prefill_instructions"].get<double>() + (kMeasured - 1) * insn_per_step,
                    "instructions: the prompt's and the measured steps'");
}

// --schedule mixed: one prompt in chunk steps beside the other user's decode rows. The
// figures of the mixed run follow the steady state of docs/performance.md "Mixed steps" from
// its reported chunk steps and decode step, against the serial run of the same shape.
void expect_mixed_steady_state(const CommandResult& serial, const CommandResult& mixed)
{
    ASSERT_EQ(serial.exit_code, 0) << serial.out << serial.err;
    ASSERT_EQ(mixed.exit_code, 0) << mixed.out << mixed.err;
    const json s = json::parse(serial.out), m = json::parse(mixed.out);
    EXPECT_EQ(s["schedule"], "serial");
    expect_near_rel(s["decode_step_ms"], s["tpot_ms"], "serial: TPOT is the decode step");
    EXPECT_EQ(m["schedule"], "mixed");
    // A step of 2048 rows (1024 for kimi-k2.5's heads) holds the 16-token prompt whole
    // beside the other user's row.
    ASSERT_EQ(m["mixed_steps"], 1);
    const double chunk_ms = m["mixed_step_ms"], step_ms = m["decode_step_ms"], C = kUsers;
    EXPECT_GT(chunk_ms, 0);
    EXPECT_EQ(m["ttft_ms"].get<double>(), chunk_ms);
    // C chunk steps and (out − 1 + k − C·k) plain ones serve the C requests.
    const double plain = (kOut - 1) + 1 - C * 1;
    expect_near_rel(m["serve_s"], (C * chunk_ms + plain * step_ms) / 1e3, "serve_s", 1e-6);
    expect_near_rel(m["e2e_s"], m["serve_s"], "a request's life is the cycle");
    expect_near_rel(m["mixed_tok_s"], C * (kPrompt + kOut) / m["serve_s"].get<double>(),
                    "mixed_tok_s");
}

TEST_F(JalRunInferenceX, MixedScheduleFollowsItsSteadyState)
{
    expect_mixed_steady_state(run({"--json"}), run({"--json", "--schedule", "mixed"}));
}

// A DeepSeek-V3 shape takes the mixed schedule too (its mixed step runs the decode rows and
// the chunk as two passes: Runtime::mixed_step).
TEST_F(JalRunInferenceX, MixedScheduleRunsADeepseekShape)
{
    expect_mixed_steady_state(run({"--json", "--shape", "kimi-k2.5"}),
                              run({"--json", "--schedule", "mixed", "--shape", "kimi-k2.5"}));
}

TEST_F(JalRunInferenceX, MixedScheduleNeedsAProjectedTimingRun)
{
    const CommandResult bad = run({"--schedule", "sometimes"});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("expected serial or mixed"), std::string::npos) << bad.err;
    const CommandResult r = run_command({bin_path("jal-run"), "--schedule", "mixed", "--n", "4"},
                                        {emu_->env()}, std::chrono::seconds(60));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("needs --timing-only, --project-out"), std::string::npos) << r.err;
}

// A tray's projection reports how its chips share the experts, the one asked for or (auto)
// the one open kept; a bad layout, and a layout for one chip, are refused.
TEST_F(JalRunInferenceX, TrayExpertsAreReportedAndChecked)
{
    for (const char* layout : {"experts", "striped", "auto"}) {
        const CommandResult r = run({"--chips", "2", "--tray-experts", layout, "--json"});
        ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
        const json j = json::parse(r.out);
        EXPECT_EQ(j["chips"], 2);
        const std::string kept = j["tray_experts"];
        if (std::string(layout) == "auto")
            EXPECT_TRUE(kept == "experts" || kept == "striped") << kept;
        else
            EXPECT_EQ(kept, layout);
    }
    const CommandResult bad = run({"--chips", "2", "--tray-experts", "sideways"});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("expected auto, experts or striped"), std::string::npos) << bad.err;
    const CommandResult one = run({"--tray-experts", "striped"});
    EXPECT_NE(one.exit_code, 0);
    EXPECT_NE(one.err.find("needs --chips 2 or more"), std::string::npos) << one.err;
}

TEST_F(JalRunInferenceX, SummaryShowsTheFigures)
{
    const CommandResult r = run({});
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    for (const char* text :
         {"InferenceX (16 in, 32 out, concurrency 2): E2E ", "2 requests served in",
          "mixed tok/s per kW: ", " rated (700 W), ", " modelled (", "dispatches a decode step (",
          "instructions, every slice's)", "decode roofline: ", "at 15.36 TB/s"})
        EXPECT_NE(r.out.find(text), std::string::npos) << text << "\n" << r.out;
}

}  // namespace
