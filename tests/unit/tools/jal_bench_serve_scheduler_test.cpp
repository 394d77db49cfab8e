// `jal-bench serve --timing-only`'s scheduler and cost projection over a fake runtime whose
// modelled costs are simple functions of the work, against hand-computed timelines.
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jal/model/runtime.hpp>

#include "serve_chip_cost.hpp"
#include "serve_scheduler.hpp"

namespace {

using namespace jal::bench;
using jal::model::ChipTotals;

// Costs: a prefill of L tokens prefill_ns(L) and 10 nJ a token; a decode step of b
// sequences 1000 ns + 100 ns a sequence + the sum of their lengths × len_ns, 5 nJ a
// sequence.
class FakeRuntime : public jal::model::Runtime {
public:
    uint64_t (*prefill_ns)(uint32_t) = [](uint32_t len) { return uint64_t(1000) * len; };
    uint64_t len_ns = 0;
    std::vector<uint32_t> freed_lengths;  // each sequence's length when it was freed

    const jal::model::GptOssConfig& config() const override { return config_; }
    const jal::model::RuntimeOptions& options() const override { return options_; }
    uint32_t slices() const override { return 1; }
    uint64_t weight_bytes() const override { return 0; }
    int create_sequence() override
    {
        for (int s = 0;; s++)
            if (!len_.count(s)) {
                len_[s] = 0;
                return s;
            }
    }
    void free_sequence(int seq) override
    {
        freed_lengths.push_back(len_.at(seq));
        len_.erase(seq);
    }
    uint32_t sequence_length(int seq) const override { return len_.at(seq); }
    void assume_length(int seq, uint32_t len) override { len_.at(seq) = len; }
    std::vector<float> prefill(int seq, std::span<const int32_t> tokens) override
    {
        const auto n = static_cast<uint32_t>(tokens.size());
        len_.at(seq) += n;
        last_ = {1, prefill_ns(n), uint64_t(10) * n, 0, 0};
        return {};
    }
    // The chunk's prefill cost plus 100 ns a decode row: the rows ride along (no step cost
    // of their own); 10 nJ a chunk token, 5 a row.
    std::vector<std::vector<float>> mixed_step(std::span<const std::pair<int, int32_t>> b, int seq,
                                               std::span<const int32_t> chunk) override
    {
        const auto n = static_cast<uint32_t>(chunk.size());
        uint64_t ns = prefill_ns(n) + 100 * b.size();
        for (auto [s, token] : b) ns += len_ns * len_.at(s)++;
        len_.at(seq) += n;
        last_ = {1, ns, uint64_t(10) * n + uint64_t(5) * b.size(), 0, 0};
        return std::vector<std::vector<float>>(b.size() + 1);
    }
    void set_max_batch_tokens(uint32_t n) { options_.max_batch_tokens = n; }
    void prepare_decode(std::span<const int>, bool) override {}
    std::vector<std::vector<int32_t>>
    decode_greedy(std::span<const std::pair<int, int32_t>>, uint32_t,
                  const std::function<void(std::span<const int32_t>)>&) override
    {
        return {};
    }
    std::vector<std::vector<float>> decode(std::span<const std::pair<int, int32_t>> b) override
    {
        uint64_t ns = 1000 + 100 * b.size();
        for (auto [seq, token] : b) ns += len_ns * len_.at(seq)++;
        last_ = {1, ns, uint64_t(5) * b.size(), 0, 0};
        return std::vector<std::vector<float>>(b.size());
    }
    std::vector<uint8_t> read_back_data_for_test(uint64_t) override { return {}; }
    const ChipTotals& last() const override { return last_; }
    const ChipTotals& total() const override { return last_; }
    uint64_t decode_min_bytes(uint32_t, uint32_t) const override { return 0; }
    const std::map<std::string, ChipTotals>& last_by_kernel() const override { return kernels_; }

private:
    jal::model::GptOssConfig config_{};
    jal::model::RuntimeOptions options_{};
    std::map<int, uint32_t> len_;
    ChipTotals last_;
    std::map<std::string, ChipTotals> kernels_;
};

BenchRequest request(uint32_t prompt, uint32_t out)
{
    return {std::vector<int32_t>(prompt, 1), out};
}

TEST(ServeScheduler, AdmitThenDecodeTogetherInModelledTime)
{
    FakeRuntime rt;
    ChipCost cost(rt, 0);  // everything run
    // Concurrency 2: A and B sent at 0; A prefilled (3000 ns), B (2000 ns), a step of both
    // (1200 ns) ends B at 6200 and sends C, prefilled (1000 ns, done: one token), then a
    // step of A alone (1100 ns) ends it at 8300.
    const PointRun run =
        run_scheduler(cost, 2, {request(3, 3), request(2, 2), request(1, 1)}, false, false);
    ASSERT_EQ(run.requests.size(), 3u);
    const RequestTiming &a = run.requests[0], &b = run.requests[1], &c = run.requests[2];
    EXPECT_DOUBLE_EQ(a.ttft_s, 3000e-9);
    EXPECT_DOUBLE_EQ(a.e2e_s, 8300e-9);
    EXPECT_EQ(a.itl_s, (std::vector<double>{3200e-9, 2100e-9}));
    EXPECT_EQ(a.output_tokens, 3u);
    EXPECT_EQ(a.prompt_tokens, 3u);
    EXPECT_DOUBLE_EQ(b.ttft_s, 5000e-9);
    EXPECT_DOUBLE_EQ(b.e2e_s, 6200e-9);
    EXPECT_EQ(b.itl_s, (std::vector<double>{1200e-9}));
    EXPECT_DOUBLE_EQ(c.start_s, 6200e-9);
    EXPECT_DOUBLE_EQ(c.ttft_s, 1000e-9);
    EXPECT_DOUBLE_EQ(c.e2e_s, 1000e-9);
    EXPECT_TRUE(c.itl_s.empty());
    EXPECT_DOUBLE_EQ(run.duration_s, 8300e-9);
    EXPECT_TRUE(run.chip.known);
    EXPECT_DOUBLE_EQ(run.chip.modelled_s, 8300e-9);
    // 60 nJ of prefills, 10 + 5 nJ of steps, and 125 W static over 8.3 µs.
    EXPECT_DOUBLE_EQ(run.chip.energy_j, 75e-9 + 125 * 8300e-9);
    EXPECT_EQ(cost.counts().steps_run, 2u);
    EXPECT_EQ(cost.counts().steps_projected, 0u);
    // Freed in order B (2 + 1 decoded), C (its prompt), A (3 + 2 decoded).
    EXPECT_EQ(rt.freed_lengths, (std::vector<uint32_t>{3, 1, 5}));
}

// The same load as above, mixed (jal-serve's engine), 4 rows a pass: A's prompt alone (3000
// ns: nothing decodes yet), B's prompt beside A's decode row (2100: the row rides along),
// a step of both (1200) ends A and B at 6300 and sends C, whose prompt runs alone (1000).
TEST(ServeScheduler, MixedStepsCarryPromptsBesideDecodeRows)
{
    FakeRuntime rt;
    rt.set_max_batch_tokens(4);
    ChipCost cost(rt, 0);
    const PointRun run =
        run_scheduler(cost, 2, {request(3, 3), request(2, 2), request(1, 1)}, false, true);
    ASSERT_EQ(run.requests.size(), 3u);
    const RequestTiming &a = run.requests[0], &b = run.requests[1], &c = run.requests[2];
    EXPECT_DOUBLE_EQ(a.ttft_s, 3000e-9);
    EXPECT_EQ(a.itl_s, (std::vector<double>{2100e-9, 1200e-9}));
    EXPECT_DOUBLE_EQ(a.e2e_s, 6300e-9);
    EXPECT_DOUBLE_EQ(b.ttft_s, 5100e-9);
    EXPECT_EQ(b.itl_s, (std::vector<double>{1200e-9}));
    EXPECT_DOUBLE_EQ(b.e2e_s, 6300e-9);
    EXPECT_DOUBLE_EQ(c.start_s, 6300e-9);
    EXPECT_DOUBLE_EQ(c.ttft_s, 1000e-9);
    EXPECT_DOUBLE_EQ(run.duration_s, 7300e-9);
    // 30 + 25 + 10 + 10 nJ, and 125 W static over 7.3 µs.
    EXPECT_DOUBLE_EQ(run.chip.energy_j, 75e-9 + 125 * 7300e-9);
    EXPECT_EQ(cost.counts().mixed_run, 3u);  // the prompts alone are passes of one chunk too
    EXPECT_EQ(cost.counts().steps_run, 1u);
    EXPECT_EQ(rt.freed_lengths, (std::vector<uint32_t>{5, 3, 1}));
}

// A prompt longer than a pass leaves: B's 6 tokens in chunks of 3 beside A's decode row,
// the second chunk's step giving B's first token; projected steps reuse a run one's cost.
TEST(ServeScheduler, LongPromptsRunInChunksAndProject)
{
    FakeRuntime rt;
    rt.set_max_batch_tokens(4);
    ChipCost cost(rt, 1);
    const PointRun run = run_scheduler(cost, 2, {request(1, 6), request(6, 2)}, false, true);
    const RequestTiming &a = run.requests[0], &b = run.requests[1];
    // A alone (1000), then B's chunks [0, 3) and [3, 6) beside A (3100 each), then a step of
    // both (1200) ends B, then A alone (1100, the second one projected) until its sixth.
    EXPECT_DOUBLE_EQ(a.ttft_s, 1000e-9);
    EXPECT_DOUBLE_EQ(b.ttft_s, 7200e-9);
    EXPECT_EQ(a.itl_s, (std::vector<double>{3100e-9, 3100e-9, 1200e-9, 1100e-9, 1100e-9}));
    EXPECT_DOUBLE_EQ(b.e2e_s, 8400e-9);
    EXPECT_DOUBLE_EQ(a.e2e_s, 10600e-9);
    EXPECT_EQ(cost.counts().mixed_run, 3u);  // A's prompt alone, B's two chunks (new positions)
    EXPECT_EQ(cost.counts().steps_run, 2u);  // one step of each batch size
    EXPECT_EQ(cost.counts().steps_projected, 1u);
}

TEST(ServeScheduler, ProjectionReusesInterpolatesAndAdvancesLengths)
{
    FakeRuntime rt;
    rt.prefill_ns = [](uint32_t len) { return uint64_t(100) * len * len; };
    rt.len_ns = 1;
    ChipCost cost(rt, 1);  // one step of each batch size run
    // Concurrency 1: prefills of 4 (1600 ns, run), 8 (6400, run), 6 (interpolated 4000,
    // not 3600), 4 (reused 1600); the first step (at length 4: 1104 ns) runs, the other 7
    // cost the same.
    const PointRun run = run_scheduler(
        cost, 1, {request(4, 3), request(8, 3), request(6, 3), request(4, 3)}, false, false);
    EXPECT_EQ(cost.counts().prefills_run, 2u);
    EXPECT_EQ(cost.counts().prefills_interpolated, 1u);
    EXPECT_EQ(cost.counts().prefills_reused, 1u);
    EXPECT_EQ(cost.counts().steps_run, 1u);
    EXPECT_EQ(cost.counts().steps_projected, 7u);
    EXPECT_DOUBLE_EQ(run.requests[2].ttft_s, 4000e-9);
    EXPECT_DOUBLE_EQ(run.requests[3].ttft_s, 1600e-9);
    EXPECT_DOUBLE_EQ(run.requests[1].e2e_s, (6400 + 2 * 1104) * 1e-9);
    EXPECT_DOUBLE_EQ(run.duration_s, (1600 + 6400 + 4000 + 1600 + 8 * 1104) * 1e-9);
    // Each sequence holds its prompt and the two tokens decoded after it, projected or not.
    EXPECT_EQ(rt.freed_lengths, (std::vector<uint32_t>{6, 10, 8, 6}));
}

}  // namespace
