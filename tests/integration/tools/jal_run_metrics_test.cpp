// jal-run's InferenceX figures (tools/jal-run/metrics.hpp) from given modelled times and
// energies, without a device: each figure against its definition in docs/performance.md,
// "InferenceX methodology".
#include <gtest/gtest.h>

#include <jal/model/runtime.hpp>

#include "metrics.hpp"

namespace {

using jal::run::compute_metrics;
using jal::run::RunFigures;

TEST(JalRunMetrics, InferenceXFiguresFollowTheirDefinitions)
{
    RunFigures f;
    f.prefill_ns = 500'000'000;             // TTFT 500 ms
    f.decode_ns = 9 * 20'000'000ull;        // 9 steps of 20 ms
    f.prefill_energy_nj = 100'000'000'000;  // 100 J of dynamic energy a prompt
    f.decode_energy_nj = 50'000'000'000;
    f.prompt_tokens = 90;
    f.out_tokens = 10;
    f.users = 4;
    const auto m = compute_metrics(f);
    EXPECT_DOUBLE_EQ(m.ttft_ms, 500);
    EXPECT_DOUBLE_EQ(m.tpot_ms, 20);
    EXPECT_DOUBLE_EQ(m.e2e_ms, 680);
    EXPECT_DOUBLE_EQ(m.e2e_s, 0.68);
    EXPECT_DOUBLE_EQ(m.tok_s_user, 50);
    // Four prompts one after another, then nine steps of the four together.
    EXPECT_DOUBLE_EQ(m.serve_s, 2.18);
    EXPECT_DOUBLE_EQ(m.output_tok_s, 40 / 2.18);
    EXPECT_DOUBLE_EQ(m.tok_s, m.output_tok_s);
    EXPECT_DOUBLE_EQ(m.mixed_tok_s, 400 / 2.18);
    const double joules = jal::model::kStaticPowerW * 2.18 + 4 * 100 + 50;
    EXPECT_DOUBLE_EQ(m.avg_power_w, joules / 2.18);
    EXPECT_DOUBLE_EQ(m.tok_s_per_kw, m.output_tok_s / (m.avg_power_w / 1000));
    EXPECT_DOUBLE_EQ(m.mixed_tok_s_per_kw_modelled, m.mixed_tok_s / (m.avg_power_w / 1000));
    EXPECT_DOUBLE_EQ(m.mixed_tok_s_per_kw_rated, m.mixed_tok_s / 0.7);
}

// The mixed schedule, worked by hand: 4 users, 10 tokens out, a prompt in 2 chunk steps of
// 30 ms (each also decoding the 3 other users), plain steps of 20 ms. Over the life of the
// 4 requests: 8 chunk steps and 10 − 1 + 2 − 8 = 3 plain ones.
TEST(JalRunMetrics, MixedScheduleFollowsItsSteadyState)
{
    RunFigures f;
    f.decode_ns = 9 * 20'000'000ull;
    f.decode_energy_nj = 9 * 1'000'000'000ull;  // 1 J a plain step
    f.mixed_steps = 2;
    f.mixed_ns = 60'000'000;
    f.mixed_energy_nj = 6'000'000'000;  // 3 J a chunk step
    f.prompt_tokens = 90;
    f.out_tokens = 10;
    f.users = 4;
    const auto m = compute_metrics(f);
    EXPECT_DOUBLE_EQ(m.ttft_ms, 60);
    EXPECT_DOUBLE_EQ(m.serve_s, 0.3);  // 8 × 30 + 3 × 20 ms
    EXPECT_DOUBLE_EQ(m.e2e_s, 0.3);
    EXPECT_DOUBLE_EQ(m.tpot_ms, 240.0 / 9);
    EXPECT_DOUBLE_EQ(m.output_tok_s, 40 / 0.3);
    EXPECT_DOUBLE_EQ(m.mixed_tok_s, 400 / 0.3);
    const double joules = jal::model::kStaticPowerW * 0.3 + 8 * 3 + 3 * 1;
    EXPECT_DOUBLE_EQ(m.avg_power_w, joules / 0.3);
    EXPECT_DOUBLE_EQ(m.mixed_tok_s_per_kw_rated, m.mixed_tok_s / 0.7);
    // One user: its chunks alone, then its nine steps.
    f.users = 1;
    EXPECT_DOUBLE_EQ(compute_metrics(f).serve_s, 0.06 + 0.18);
    // Six users' 12 chunk steps cannot ride on 10 − 1 + 2 = 11 steps.
    f.users = 6;
    EXPECT_THROW(compute_metrics(f), std::runtime_error);
}

TEST(JalRunMetrics, OneOutputTokenHasNoTpot)
{
    RunFigures f;
    f.prefill_ns = 1'000'000;
    f.prompt_tokens = 8;
    f.out_tokens = 1;
    const auto m = compute_metrics(f);
    EXPECT_EQ(m.tpot_ms, 0);
    EXPECT_EQ(m.tok_s_user, 0);
    EXPECT_DOUBLE_EQ(m.e2e_s, 0.001);
    EXPECT_DOUBLE_EQ(m.mixed_tok_s, 9000);
    EXPECT_DOUBLE_EQ(m.mixed_tok_s_per_kw_rated, 9000 / 0.7);
}

TEST(JalRunMetrics, NoTimeGivesZerosNotInfinities)
{
    const auto m = compute_metrics(RunFigures{});
    EXPECT_EQ(m.mixed_tok_s, 0);
    EXPECT_EQ(m.mixed_tok_s_per_kw_rated, 0);
    EXPECT_EQ(m.mixed_tok_s_per_kw_modelled, 0);
    EXPECT_EQ(m.avg_power_w, 0);
}

}  // namespace
