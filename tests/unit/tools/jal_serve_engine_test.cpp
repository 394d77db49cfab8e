// jal-serve's continuous-batching engine (tools/jal-serve/engine.hpp) over a fake model
// runtime whose next token is always the last one plus 1: admission, batching, stop ids,
// cancellation, the concurrency limit, draining and aborting.
#include <condition_variable>
#include <functional>
#include <mutex>
#include <set>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "engine.hpp"

namespace {

using namespace jal::serve;
using jal::model::ChipTotals;

constexpr uint32_t kVocab = 32;

class FakeRuntime : public jal::model::Runtime {
public:
    explicit FakeRuntime(uint32_t slots) : slots_(slots)
    {
        config_.n_vocab = kVocab;
        options_.n_ctx = 64;
        options_.max_sequences = slots;
    }
    const jal::model::GptOssConfig& config() const override { return config_; }
    const jal::model::RuntimeOptions& options() const override { return options_; }
    uint32_t slices() const override { return 1; }
    uint64_t weight_bytes() const override { return 0; }
    int create_sequence() override
    {
        std::lock_guard lock(mutex_);
        for (int s = 0; s < static_cast<int>(slots_); s++)
            if (live_.insert(s).second) return s;
        throw std::runtime_error("no free slot");
    }
    void free_sequence(int seq) override
    {
        std::lock_guard lock(mutex_);
        live_.erase(seq);
    }
    uint32_t sequence_length(int) const override { return 0; }
    void assume_length(int, uint32_t) override {}
    std::vector<float> prefill(int seq, std::span<const int32_t> tokens) override
    {
        if (before_prefill) before_prefill();
        log(fmt::format("prefill {}:{}", seq, tokens.size()));
        return next_after(tokens.back());
    }
    std::vector<std::vector<float>> mixed_step(std::span<const std::pair<int, int32_t>> b, int seq,
                                               std::span<const int32_t> chunk) override
    {
        if (before_decode) before_decode();
        log(fmt::format("mixed {} + {}:{}", b.size(), seq, chunk.size()));
        std::vector<std::vector<float>> out;
        for (auto [s, token] : b) out.push_back(next_after(token));
        out.push_back(next_after(chunk.back()));
        return out;
    }
    void prepare_decode(std::span<const int>, bool) override {}
    std::vector<std::vector<int32_t>>
    decode_greedy(std::span<const std::pair<int, int32_t>>, uint32_t,
                  const std::function<void(std::span<const int32_t>)>&) override
    {
        return {};
    }
    std::vector<std::vector<float>> decode(std::span<const std::pair<int, int32_t>> b) override
    {
        if (before_decode) before_decode();
        log(fmt::format("decode {}", b.size()));
        std::vector<std::vector<float>> out;
        for (auto [seq, token] : b) out.push_back(next_after(token));
        std::lock_guard lock(mutex_);
        largest_batch_ = std::max(largest_batch_, b.size());
        return out;
    }
    std::vector<uint8_t> read_back_data_for_test(uint64_t) override { return {}; }
    const ChipTotals& last() const override { return totals_; }
    const ChipTotals& total() const override { return totals_; }
    uint64_t decode_min_bytes(uint32_t, uint32_t) const override { return 0; }
    const std::map<std::string, ChipTotals>& last_by_kernel() const override { return kernels_; }

    size_t live() const
    {
        std::lock_guard lock(mutex_);
        return live_.size();
    }
    size_t largest_batch() const
    {
        std::lock_guard lock(mutex_);
        return largest_batch_;
    }
    std::vector<std::string> calls() const
    {
        std::lock_guard lock(mutex_);
        return calls_;
    }
    void set_max_batch_tokens(uint32_t n) { options_.max_batch_tokens = n; }
    std::function<void()> before_decode;   // runs on the engine thread
    std::function<void()> before_prefill;  // likewise

private:
    static std::vector<float> next_after(int32_t token)
    {
        std::vector<float> logits(kVocab, 0.0f);
        logits[(token + 1) % kVocab] = 1.0f;
        return logits;
    }
    uint32_t slots_;
    jal::model::GptOssConfig config_;
    jal::model::RuntimeOptions options_;
    ChipTotals totals_;
    std::map<std::string, ChipTotals> kernels_;
    mutable std::mutex mutex_;
    std::set<int> live_;
    size_t largest_batch_ = 0;
    std::vector<std::string> calls_;
    void log(std::string call)
    {
        std::lock_guard lock(mutex_);
        calls_.push_back(std::move(call));
    }
};

// A job whose updates are collected as they come; wait() blocks until it has finished.
struct Watched {
    std::shared_ptr<Job> job;
    std::mutex mutex;
    std::condition_variable cv;
    std::vector<int32_t> tokens;
    Job::Update last;

    explicit Watched(GenerationParams p) : job(std::make_shared<Job>(std::move(p)))
    {
        job->set_notify([this] {
            std::lock_guard lock(mutex);
            Job::Update u = job->take();
            tokens.insert(tokens.end(), u.tokens.begin(), u.tokens.end());
            last = u;
            cv.notify_all();
        });
    }
    bool wait()
    {
        std::unique_lock lock(mutex);
        return cv.wait_for(lock, std::chrono::seconds(60),
                           [&] { return last.finish != FinishReason::none; });
    }
};

GenerationParams params(std::vector<int32_t> prompt, uint32_t max_tokens)
{
    GenerationParams p;
    p.prompt = std::move(prompt);
    p.max_tokens = max_tokens;
    p.sampling.temperature = 0;
    return p;
}

struct JalServeEngine : ::testing::Test {
    Metrics metrics;
    FakeRuntime* rt = nullptr;
    std::unique_ptr<Engine> engine;
    void start(uint32_t slots, uint32_t in_flight)
    {
        auto owned = std::make_unique<FakeRuntime>(slots);
        rt = owned.get();
        engine =
            std::make_unique<Engine>(std::move(owned), EngineLimits{slots, in_flight}, metrics);
    }
};

TEST_F(JalServeEngine, GeneratesUpToMaxTokens)
{
    start(2, 8);
    Watched w(params({5}, 4));
    ASSERT_EQ(engine->submit(w.job), Engine::Admission::accepted);
    ASSERT_TRUE(w.wait());
    EXPECT_EQ(w.tokens, (std::vector<int32_t>{6, 7, 8, 9}));
    EXPECT_EQ(w.last.finish, FinishReason::length);
    EXPECT_EQ(w.last.completion_tokens, 4u);
}

TEST_F(JalServeEngine, StopIdEndsTheReplyUndelivered)
{
    start(2, 8);
    GenerationParams p = params({5}, 10);
    p.stop_ids = {8};
    Watched w(p);
    engine->submit(w.job);
    ASSERT_TRUE(w.wait());
    EXPECT_EQ(w.tokens, (std::vector<int32_t>{6, 7}));
    EXPECT_EQ(w.last.finish, FinishReason::stop);
    EXPECT_EQ(w.last.completion_tokens, 3u);  // the stop id counts
}

TEST_F(JalServeEngine, MoreRequestsThanSlotsAreBatchedAndQueued)
{
    start(2, 8);
    // The first decode waits until every request is queued, so the engine cannot finish
    // one request before the next arrives.
    std::mutex m;
    std::condition_variable cv;
    bool all_queued = false;
    rt->before_decode = [&] {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return all_queued; });
    };
    std::vector<std::unique_ptr<Watched>> ws;
    for (int32_t i = 0; i < 5; i++) {
        ws.push_back(std::make_unique<Watched>(params({i}, 6)));
        // EXPECT, not ASSERT: returning here would leave the engine waiting at the gate.
        EXPECT_EQ(engine->submit(ws.back()->job), Engine::Admission::accepted);
    }
    {
        std::lock_guard lock(m);
        all_queued = true;
    }
    cv.notify_all();
    for (int32_t i = 0; i < 5; i++) {
        ASSERT_TRUE(ws[i]->wait());
        EXPECT_EQ(ws[i]->tokens, (std::vector<int32_t>{i + 1, i + 2, i + 3, i + 4, i + 5, i + 6}));
    }
    EXPECT_EQ(rt->largest_batch(), 2u);  // two slots, decoded together
    EXPECT_EQ(rt->live(), 0u);
}

TEST_F(JalServeEngine, CancelledRequestIsFreed)
{
    start(2, 8);
    Watched w(params({0}, 30));
    int decodes = 0;
    rt->before_decode = [&] {
        if (++decodes == 2) w.job->cancel();
    };
    engine->submit(w.job);
    ASSERT_TRUE(w.wait());
    EXPECT_EQ(w.last.finish, FinishReason::cancelled);
    EXPECT_EQ(w.tokens, (std::vector<int32_t>{1, 2, 3}));  // prefill's and two decodes'
    EXPECT_EQ(rt->live(), 0u);
    EXPECT_NE(metrics.render().find("jal_serve_requests_cancelled_total 1\n"), std::string::npos);

    Watched queued(params({0}, 3));
    queued.job->cancel();  // before it was ever admitted
    engine->submit(queued.job);
    ASSERT_TRUE(queued.wait());
    EXPECT_EQ(queued.last.finish, FinishReason::cancelled);
    EXPECT_TRUE(queued.tokens.empty());
}

TEST_F(JalServeEngine, LimitDrainAndAbort)
{
    start(1, 1);
    std::mutex m;
    std::condition_variable cv;
    bool release = false;
    rt->before_decode = [&] {
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return release; });
    };
    Watched first(params({0}, 3));
    ASSERT_EQ(engine->submit(first.job), Engine::Admission::accepted);
    Watched second(params({0}, 3));
    EXPECT_EQ(engine->submit(second.job), Engine::Admission::busy);
    engine->drain();
    EXPECT_EQ(engine->submit(second.job), Engine::Admission::stopping);
    {
        std::lock_guard lock(m);
        release = true;
    }
    cv.notify_all();
    ASSERT_TRUE(first.wait());  // drained: the request in flight still completes
    EXPECT_EQ(first.last.finish, FinishReason::length);
    engine->join();
}

// The window between a request leaving the queue and its prefill ending: it still holds
// its place, so a submit() then is refused rather than over-filling the engine.
TEST_F(JalServeEngine, RequestInPrefillHoldsItsPlace)
{
    start(1, 1);
    std::mutex m;
    std::condition_variable cv;
    bool in_prefill = false, release = false;
    rt->before_prefill = [&] {
        std::unique_lock lock(m);
        in_prefill = true;
        cv.notify_all();
        cv.wait(lock, [&] { return release; });
    };
    Watched first(params({0}, 2));
    ASSERT_EQ(engine->submit(first.job), Engine::Admission::accepted);
    {
        std::unique_lock lock(m);
        ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return in_prefill; }));
    }
    EXPECT_EQ(engine->load(), 1u);
    Watched second(params({0}, 2));
    EXPECT_EQ(engine->submit(second.job), Engine::Admission::busy);
    {
        std::lock_guard lock(m);
        release = true;
    }
    cv.notify_all();
    ASSERT_TRUE(first.wait());
    EXPECT_EQ(first.last.finish, FinishReason::length);
}

// Chunked prefill: a prompt longer than a pass's rows runs a chunk a step, each inside the
// decode of the sequence already running (whose tokens keep coming), and its first token
// comes from its last chunk.
TEST_F(JalServeEngine, LongPromptRunsInChunksInsideDecodeSteps)
{
    start(2, 8);
    rt->set_max_batch_tokens(4);
    std::mutex m;
    std::condition_variable cv;
    bool both = false;
    rt->before_decode = [&] {  // the first decode waits until both requests are queued
        std::unique_lock lock(m);
        cv.wait(lock, [&] { return both; });
    };
    Watched first(params({0}, 8));
    Watched second(params({10, 11, 12, 13, 14, 15, 16, 17}, 2));
    ASSERT_EQ(engine->submit(first.job), Engine::Admission::accepted);
    ASSERT_EQ(engine->submit(second.job), Engine::Admission::accepted);
    {
        std::lock_guard lock(m);
        both = true;
    }
    cv.notify_all();
    ASSERT_TRUE(first.wait());
    ASSERT_TRUE(second.wait());
    EXPECT_EQ(first.tokens, (std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8}));
    EXPECT_EQ(second.tokens, (std::vector<int32_t>{18, 19}));
    // The first's prompt runs alone (a step of its own: nothing else is running), maybe a
    // decode of it alone before the second is admitted, then the second's 8 tokens in chunks
    // of 3 (4 rows less the first's decode row) inside the first's decode steps.
    const std::vector<std::string> calls = rt->calls();
    const std::vector<std::string> chunked = {"mixed 1 + 1:3", "mixed 1 + 1:3", "mixed 1 + 1:2",
                                              "decode 2"};
    auto at = std::search(calls.begin(), calls.end(), chunked.begin(), chunked.end());
    EXPECT_NE(at, calls.end()) << fmt::format("{}", fmt::join(calls, ", "));
    EXPECT_EQ(std::count(calls.begin(), calls.end(), "prefill 0:1"), 1);
}

TEST_F(JalServeEngine, AbortFailsTheRequestsInFlight)
{
    start(1, 4);
    Watched w(params({0}, 30));
    rt->before_decode = [&] { engine->abort("going down"); };
    engine->submit(w.job);
    ASSERT_TRUE(w.wait());
    EXPECT_EQ(w.last.finish, FinishReason::error);
    EXPECT_EQ(w.last.error, "going down");
    engine->join();
    EXPECT_EQ(rt->live(), 0u);
}

}  // namespace
