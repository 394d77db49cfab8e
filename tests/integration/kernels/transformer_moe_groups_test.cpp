// DeepSeek-V3's routing (moe_group_routing: sigmoid, correction bias for the selection only,
// group-limited top-k, normalised and scaled weights) on a jal-emu against a
// double-precision host reference written from llama.cpp's build_moe_ffn (independent of
// the kernel's threshold arithmetic: it sorts).
//
// The kernel orders the chosen experts by s (unbiased), descending; the reference orders
// them the same way, so ids match exactly. Weights |err| <= 1e-7 + 1e-5 |want|.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <jal/kernels/library/moe.hpp>

#include "transformer_fixture.hpp"

namespace jk = jal::kernels;
using jal::test::all_near;

namespace {

struct Routing {
    std::vector<int32_t> ids;
    std::vector<double> weights;
};

// One row: the experts llama.cpp chooses and their weights, ordered by s descending.
void route_row(const float* l, const std::vector<float>& bias, const jk::MoeGroupRoutingConfig& c,
               Routing& out)
{
    const uint32_t E = c.n_expert;
    std::vector<double> s(E), b(E);
    for (uint32_t e = 0; e < E; e++)
        s[e] = 1 / (1 + std::exp(-double{l[e]})), b[e] = s[e] + bias[e];
    std::vector<bool> allowed(E, true);
    if (c.grouped()) {
        const uint32_t per = E / c.n_group;
        std::vector<double> score(c.n_group);
        for (uint32_t g = 0; g < c.n_group; g++) {
            std::vector<double> v(b.begin() + g * per, b.begin() + (g + 1) * per);
            std::sort(v.rbegin(), v.rend());
            score[g] = v[0] + v[1];
        }
        std::vector<uint32_t> order(c.n_group);
        std::iota(order.begin(), order.end(), 0u);
        std::stable_sort(order.begin(), order.end(),
                         [&](uint32_t x, uint32_t y) { return score[x] > score[y]; });
        for (uint32_t j = c.n_group_used; j < c.n_group; j++)
            for (uint32_t e = 0; e < per; e++) allowed[order[j] * per + e] = false;
    }
    std::vector<int32_t> cand;
    for (uint32_t e = 0; e < E; e++)
        if (allowed[e]) cand.push_back(static_cast<int32_t>(e));
    std::stable_sort(cand.begin(), cand.end(), [&](int32_t x, int32_t y) { return b[x] > b[y]; });
    cand.resize(c.k);
    std::stable_sort(cand.begin(), cand.end(), [&](int32_t x, int32_t y) { return s[x] > s[y]; });
    double sum = 0;
    for (int32_t e : cand) sum += s[e];
    for (int32_t e : cand) {
        out.ids.push_back(e);
        out.weights.push_back(s[e] / (c.norm ? std::max(sum, 6.103515625e-5) : 1.0) * c.scale);
    }
}

class TransformerMoeGroupsTest : public jal::test::TransformerKernelTest {
protected:
    void check(const jk::MoeGroupRoutingConfig& cfg, uint32_t rows, uint64_t seed, int n_slices)
    {
        auto logits = jal::test::random_normal(size_t{rows} * cfg.n_expert, seed, 2.0);
        auto bias = jal::test::random_normal(cfg.n_expert, seed + 1, 0.3);
        auto dl = upload(logits, rows, cfg.n_expert);
        auto db = upload(bias, 1, cfg.n_expert);
        auto dids = alloc(rows, cfg.k, JAL_DT_I32);
        auto dw = alloc(rows, cfg.k);
        run(jk::build_moe_group_routing(cfg),
            jk::moe_group_routing_args(cfg, dl.ref, db.ref, dids.ref, dw.ref), slices(n_slices));
        Routing want;
        for (uint32_t r = 0; r < rows; r++)
            route_row(logits.data() + size_t{r} * cfg.n_expert, bias, cfg, want);
        EXPECT_EQ(download_i32(dids.ref), want.ids);
        EXPECT_TRUE(all_near(download(dw.ref), want.weights, 1e-7, 1e-5));
    }
};

}  // namespace

TEST_F(TransformerMoeGroupsTest, R1RoutingKeepsTheBestGroups)
{
    // R1's routing: 256 experts in 8 groups, 4 kept, top 8, scaled by 2.5.
    check(
        {.n_expert = 256, .k = 8, .n_group = 8, .n_group_used = 4, .scale = 2.5f, .block_rows = 5},
        13, 41, 3);
}

TEST_F(TransformerMoeGroupsTest, TinyGroupsAsDsTiny)
{
    check({.n_expert = 16, .k = 4, .n_group = 4, .n_group_used = 2, .scale = 2.5f}, 9, 43, 2);
}

TEST_F(TransformerMoeGroupsTest, NoGroupsAsKimi)
{
    check({.n_expert = 384, .k = 8, .scale = 2.827f}, 6, 45, 4);
    check({.n_expert = 32, .k = 8, .n_group = 1, .scale = 2.827f}, 5, 47, 1);
}

TEST_F(TransformerMoeGroupsTest, UnnormalisedWeightsAreTheSigmoids)
{
    check({.n_expert = 64, .k = 6, .n_group = 4, .n_group_used = 2, .norm = false}, 4, 49, 2);
}

TEST_F(TransformerMoeGroupsTest, TheBiasChangesTheChoice)
{
    // A bias large enough to decide: expert 5 is chosen however small its logit.
    const jk::MoeGroupRoutingConfig cfg{.n_expert = 16, .k = 2};
    std::vector<float> logits(16, 1.0f), bias(16, 0.0f);
    logits[3] = 3.0f, logits[9] = 2.0f, logits[5] = -4.0f, bias[5] = 2.0f;
    auto dl = upload(logits, 1, 16);
    auto db = upload(bias, 1, 16);
    auto dids = alloc(1, 2, JAL_DT_I32);
    auto dw = alloc(1, 2);
    run(jk::build_moe_group_routing(cfg),
        jk::moe_group_routing_args(cfg, dl.ref, db.ref, dids.ref, dw.ref), slices(1));
    EXPECT_EQ(download_i32(dids.ref), (std::vector<int32_t>{3, 5}));
    const double s3 = 1 / (1 + std::exp(-3.0)), s5 = 1 / (1 + std::exp(4.0));
    const std::vector<double> want = {s3 / (s3 + s5), s5 / (s3 + s5)};
    EXPECT_TRUE(all_near(download(dw.ref), want, 1e-7, 1e-5));
}

TEST_F(TransformerMoeGroupsTest, BadConfigurationsAreRefused)
{
    EXPECT_THROW(
        jk::build_moe_group_routing({.n_expert = 16, .k = 4, .n_group = 3, .n_group_used = 1}),
        jal::Error);
    EXPECT_THROW(
        jk::build_moe_group_routing({.n_expert = 16, .k = 4, .n_group = 4, .n_group_used = 4}),
        jal::Error);
    EXPECT_THROW(
        jk::build_moe_group_routing({.n_expert = 16, .k = 9, .n_group = 4, .n_group_used = 2}),
        jal::Error);
}
