// The double-precision DeepSeek-V3 host pass (deepseek_forward.hpp) against llama.cpp on the
// synthetic deepseek2 presets, as the GPT-OSS model runtime is checked (model_reference_test):
// teacher-forced on llama.cpp's own 64-token greedy continuation of a 70-token prompt, in
// ggml numerics, the top-1 ids agree at every decided position (llama.cpp's top-1/top-2
// log-probability margin above 0.05) and the top-5 log-probabilities (by rank) agree within
// 0.05; free running, the greedy ids are llama.cpp's up to and including its first
// near-tie. With BF16 dense matrices (BF16 activations in llama.cpp) its own CPU builds
// disagree by up to 0.08 on these models, so, as for GPT-OSS, that disagreement (other
// builds teacher-forced on the same ids: llama_spread) is added to the margin a position
// needs to be decided and to the tolerance, and at the first near-tie our id may be either
// of llama.cpp's top two. And the routing keeps to its rules: the experts chosen lie in the
// groups kept, and their weights are normalised then scaled.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include <jal/model/synthetic_deepseek.hpp>

#include "deepseek_forward.hpp"

namespace {

using jal::test::DeepseekReference;
using nlohmann::json;

constexpr int kSteps = 64;
constexpr int kPrompt = 70;
constexpr double kMargin = 0.05;
constexpr double kLogprobTol = 0.05;

std::string csv(const std::vector<int>& ids)
{
    std::string s;
    for (int id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
    return s;
}

json llama_ref(const std::string& args)
{
    const std::string cmd = std::string(JAL_LLAMA_REF_EXE) + " " + args + " --json";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return {};
    std::string out;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    const int st = pclose(p);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? json::parse(out) : json{};
}

// Log-softmax of the logits; the top-5 by logit, the lower id first on a tie.
struct Top {
    std::vector<int> ids;
    std::vector<double> logprobs;
};

Top top5(const std::vector<double>& logits)
{
    const double mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (double l : logits) sum += std::exp(l - mx);
    const double lse = mx + std::log(sum);
    std::vector<int> ids(logits.size());
    for (size_t i = 0; i < ids.size(); i++) ids[i] = static_cast<int>(i);
    std::partial_sort(ids.begin(), ids.begin() + 5, ids.end(), [&](int a, int b) {
        return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
    });
    Top t;
    for (int k = 0; k < 5; k++) t.ids.push_back(ids[k]), t.logprobs.push_back(logits[ids[k]] - lse);
    return t;
}

// llama.cpp's own spread: per position, the largest top-5 |d log-prob| (by rank) between
// the default build and the x86-64 baseline (and haswell where the host has it),
// teacher-forced on the default build's greedy ids.
std::vector<double> llama_spread(const std::string& model, const std::vector<int>& prompt,
                                 const json& llama)
{
    std::vector<std::string> builds = {"libggml-cpu-x64.so"};
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c") && __builtin_cpu_supports("bmi2"))
        builds.push_back("libggml-cpu-haswell.so");
    const auto& llps = llama["top_logprobs"];
    std::vector<double> spread(llps.size(), 0.0);
    for (const std::string& build : builds) {
        if (build == llama["reference"]["cpu_backend"]) continue;
        const json v = llama_ref(model + " --prompt-ids " + csv(prompt) + " --force-ids " +
                                 csv(llama["tokens"].get<std::vector<int>>()) +
                                 " --top 5 --cpu-backend " + build);
        if (v.is_null()) continue;
        for (size_t p = 0; p < spread.size(); p++)
            for (size_t k = 0; k < llps[p].size(); k++)
                spread[p] = std::max(spread[p], std::fabs(llps[p][k].get<double>() -
                                                          v["top_logprobs"][p][k].get<double>()));
    }
    return spread;
}

struct Case {
    const char* preset;
    const char* dense;
};

void PrintTo(const Case& c, std::ostream* os)
{
    *os << c.preset << ", dense " << c.dense;
}

class DeepseekHostPass : public ::testing::TestWithParam<Case> {
protected:
    void SetUp() override
    {
        const Case c = GetParam();
        path_ = ::testing::TempDir() + "deepseek_ref_" + c.preset + "_" + c.dense + "_" +
                std::to_string(getpid()) + ".gguf";
        auto o = *jal::model::synthetic_deepseek_preset(c.preset);
        o.seed = 11;
        o.dense_type = *jal::model::synthetic_dense_type(c.dense);
        const auto s = jal::model::write_synthetic_deepseek(path_, o);
        for (int i = 0; i < kPrompt; i++)
            prompt_.push_back(static_cast<int>((i * 131 + 7) % s.config.n_vocab));
    }
    void TearDown() override { std::filesystem::remove(path_); }

    std::string path_;
    std::vector<int> prompt_;
};

TEST_P(DeepseekHostPass, AgreesWithLlamaCpp)
{
    const json llama = llama_ref(path_ + " --prompt-ids " + csv(prompt_) + " --n " +
                                 std::to_string(kSteps) + " --top 5");
    ASSERT_FALSE(llama.is_null());
    const std::vector<int> greedy = llama["tokens"].get<std::vector<int>>();
    // F32 dense matrices are held to the plain thresholds (llama.cpp's builds agree there to
    // about 1e-5, a Q8_0 rounding jump before an expert aside).
    const bool plain = std::string(GetParam().dense) == "f32";
    const std::vector<double> spread =
        plain ? std::vector<double>(kSteps, 0.0) : llama_spread(path_, prompt_, llama);
    const double max_spread = *std::max_element(spread.begin(), spread.end());
    const auto file = jal::model::GgufFile::open(path_);
    const DeepseekReference ref(file, /*ggml_numerics=*/true);
    auto seq = ref.new_sequence();
    std::vector<double> logits =
        ref.forward(seq, std::vector<int32_t>(prompt_.begin(), prompt_.end()));
    double worst = 0;
    int worst_at = -1, decided = 0, first_tie = kSteps;
    for (int p = 0; p < kSteps; p++) {
        const Top ours = top5(logits);
        const auto lp = llama["top_logprobs"][p].get<std::vector<double>>();
        if (lp[0] - lp[1] > kMargin + spread[p]) {
            decided++;
            EXPECT_EQ(ours.ids[0], llama["top_ids"][p][0].get<int>()) << "position " << p;
        } else {
            first_tie = std::min(first_tie, p);
        }
        for (int k = 0; k < 5; k++)
            if (std::fabs(ours.logprobs[k] - lp[k]) > worst)
                worst = std::fabs(ours.logprobs[k] - lp[k]), worst_at = p;
        logits = ref.forward(seq, {greedy[p]});
    }
    EXPECT_LE(worst, kLogprobTol + max_spread) << "at position " << worst_at;

    // Free running: the same ids as llama.cpp up to its first near-tie, and there (F32: the
    // same id; otherwise one of its top two).
    auto free_seq = ref.new_sequence();
    logits = ref.forward(free_seq, std::vector<int32_t>(prompt_.begin(), prompt_.end()));
    int same = 0, at_tie = -1;
    for (; same < kSteps; same++) {
        const int id = top5(logits).ids[0];
        if (id != greedy[same]) {
            at_tie = id;
            break;
        }
        logits = ref.forward(free_seq, {id});
    }
    const auto& tie_top = llama["top_ids"][std::min(same, kSteps - 1)];
    const bool free_ok = same > first_tie || same == kSteps ||
                         (!plain && same == first_tie &&
                          (at_tie == tie_top[0].get<int>() || at_tie == tie_top[1].get<int>()));
    EXPECT_TRUE(free_ok) << "greedy output diverges at " << same
                         << ", llama.cpp's first near-tie is at " << first_tie;
    std::printf("[ %s %s ] llama.cpp %s (its builds' spread %.2e): top-1 checked at %d decided "
                "positions of %d, worst top-5 |dlogprob| %.2e at %d; free-running greedy equal "
                "for %d (first near-tie %d)\n",
                GetParam().preset, GetParam().dense,
                llama["reference"]["cpu_backend"].get<std::string>().c_str(), max_spread, decided,
                kSteps, worst, worst_at, same, first_tie);
    RecordProperty("worst_logprob_diff", std::to_string(worst));
}

TEST_P(DeepseekHostPass, RoutingKeepsToTheGroupsAndScales)
{
    const auto file = jal::model::GgufFile::open(path_);
    const DeepseekReference ref(file, true);
    const auto& c = ref.config();
    const uint32_t per = c.grouped() ? c.n_expert / c.n_expert_groups : c.n_expert;
    std::set<uint32_t> seen;
    for (uint32_t t = 0; t < 32; t++) {
        // Hidden states of unit size, different enough to route differently.
        std::vector<double> h(c.n_embd);
        for (uint32_t i = 0; i < c.n_embd; i++) h[i] = std::sin(1.0 + t * 0.7 + i * (t + 3) * 0.37);
        const auto r = ref.route(c.n_layer_dense_lead, h);
        ASSERT_EQ(r.experts.size(), c.n_expert_used);
        std::set<uint32_t> groups;
        double sum = 0;
        for (size_t j = 0; j < r.experts.size(); j++) {
            groups.insert(r.experts[j] / per);
            seen.insert(r.experts[j]);
            sum += r.weights[j];
            EXPECT_GT(r.weights[j], 0.0);
        }
        EXPECT_LE(groups.size(), c.grouped() ? c.n_group_used : 1u);
        EXPECT_NEAR(sum, c.expert_weights_scale, 1e-12);  // normalised, then scaled
    }
    EXPECT_GT(seen.size(), c.n_expert_used);  // the choice depends on the input
}

TEST_P(DeepseekHostPass, AbsorbedAndExpandedAttentionAgree)
{
    // The two forms of MLA are one function: in double precision (native numerics, no
    // activation rounding) their logits agree to rounding over a 20-token prompt and 8 steps.
    const auto file = jal::model::GgufFile::open(path_);
    const DeepseekReference absorbed(file, false), expanded(file, false, true);
    auto a = absorbed.new_sequence(), e = expanded.new_sequence();
    const std::vector<int32_t> prompt(prompt_.begin(), prompt_.begin() + 20);
    std::vector<double> la = absorbed.forward(a, prompt), le = expanded.forward(e, prompt);
    for (int step = 0; step < 8; step++) {
        double worst = 0, scale = 1;
        for (size_t i = 0; i < la.size(); i++) {
            worst = std::max(worst, std::fabs(la[i] - le[i]));
            scale = std::max(scale, std::fabs(la[i]));
        }
        EXPECT_LE(worst, 1e-9 * scale) << "step " << step;
        const int32_t next = top5(la).ids[0];
        la = absorbed.forward(a, {next});
        le = expanded.forward(e, {next});
    }
}

// ds-tiny: R1's grouped routing; kimi-tiny: Kimi K2's, many experts and no groups. BF16
// dense matrices (as R1's non-expert weights are published) on ds-tiny.
INSTANTIATE_TEST_SUITE_P(Presets, DeepseekHostPass,
                         ::testing::Values(Case{"ds-tiny", "f32"}, Case{"kimi-tiny", "f32"},
                                           Case{"ds-tiny", "bf16"}),
                         [](const auto& info) {
                             std::string s =
                                 std::string(info.param.preset) + "_" + info.param.dense;
                             std::replace(s.begin(), s.end(), '-', '_');
                             return s;
                         });

}  // namespace
