// MoE routing (top-k by VTOPK, softmax over the selected logits) and the weighted combine
// of expert outputs, on a jal-emu, against double-precision references of llama.cpp's
// build_moe_ffn with LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT (no renormalisation).
//
// Ties: the reference orders experts by logit, descending, then by id, ascending (VTOPK's
// rule); the ids must match exactly. Tolerances: weights |err| <= 1e-7 + 1e-5 |want|;
// combine |err| <= 1e-6 + 1e-6 sum_j |w_j e_j| per element.
#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>
#include <vector>

#include <jal/kernels/library/elementwise.hpp>
#include <jal/kernels/library/moe.hpp>
#include <jal/kernels/library/norm.hpp>

#include "transformer_fixture.hpp"

namespace jk = jal::kernels;
using jal::test::all_near;

namespace {

struct Routing {
    std::vector<int32_t> ids;
    std::vector<double> weights;
};

Routing routing_ref(const std::vector<float>& logits, uint32_t rows, uint32_t n_expert, uint32_t k)
{
    Routing out;
    for (uint32_t r = 0; r < rows; r++) {
        const float* l = logits.data() + size_t{r} * n_expert;
        std::vector<int32_t> order(n_expert);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(),
                         [&](int32_t a, int32_t b) { return l[a] > l[b]; });
        double m = l[order[0]], sum = 0;
        for (uint32_t j = 0; j < k; j++) sum += std::exp(l[order[j]] - m);
        for (uint32_t j = 0; j < k; j++) {
            out.ids.push_back(order[j]);
            out.weights.push_back(std::exp(l[order[j]] - m) / sum);
        }
    }
    return out;
}

}  // namespace

class TransformerMoeTest : public jal::test::TransformerKernelTest {};

TEST_F(TransformerMoeTest, RoutingPicksTopKAndSoftmaxesOnlyThose)
{
    const uint32_t rows = 21, n_expert = 32, k = 4;
    auto logits = jal::test::random_normal(size_t{rows} * n_expert, 31, 2.0);
    auto dl = upload(logits, rows, n_expert);
    auto dids = alloc(rows, k, JAL_DT_I32);
    auto dw = alloc(rows, k);
    const jk::MoeRoutingConfig cfg{.n_expert = n_expert, .k = k, .block_rows = 4};
    run(jk::build_moe_routing(cfg), jk::moe_routing_args(cfg, dl.ref, dids.ref, dw.ref), slices(3));
    Routing want = routing_ref(logits, rows, n_expert, k);
    EXPECT_EQ(download_i32(dids.ref), want.ids);
    EXPECT_TRUE(all_near(download(dw.ref), want.weights, 1e-7, 1e-5));
}

TEST_F(TransformerMoeTest, RoutingWithTiedLogits)
{
    // Logits on a coarse grid (many exact ties), including ties across the k-th place and
    // a row where every logit is equal.
    const uint32_t rows = 12, n_expert = 128, k = 4;
    std::vector<float> logits(size_t{rows} * n_expert);
    std::mt19937_64 rng(32);
    for (float& v : logits) v = static_cast<float>(static_cast<int>(rng() % 5)) * 0.5f - 1.0f;
    std::fill(logits.begin() + 5 * n_expert, logits.begin() + 6 * n_expert, 0.75f);
    auto dl = upload(logits, rows, n_expert);
    auto dids = alloc(rows, k, JAL_DT_I32);
    auto dw = alloc(rows, k);
    const jk::MoeRoutingConfig cfg{.n_expert = n_expert, .k = k};
    run(jk::build_moe_routing(cfg), jk::moe_routing_args(cfg, dl.ref, dids.ref, dw.ref), slices(2));
    Routing want = routing_ref(logits, rows, n_expert, k);
    EXPECT_EQ(download_i32(dids.ref), want.ids);
    auto w = download(dw.ref);
    EXPECT_TRUE(all_near(w, want.weights, 1e-7, 1e-5));
    for (uint32_t j = 0; j < k; j++)
        EXPECT_FLOAT_EQ(w[5 * k + j], 0.25f);  // all equal: uniform weights
}

// Expert parallelism over chips (MoeRoutingConfig::local_experts): the same top k and
// weights over every expert, then the ids made local to the chip's experts and the weights
// of the other chips' pairs zeroed; every chip's ids and weights together are the routing.
TEST_F(TransformerMoeTest, RoutingKeepsTheLocalExpertsOfAChip)
{
    const uint32_t rows = 13, n_expert = 32, k = 4, chips = 4, local = n_expert / chips;
    auto logits = jal::test::random_normal(size_t{rows} * n_expert, 38, 2.0);
    auto dl = upload(logits, rows, n_expert);
    const Routing want = routing_ref(logits, rows, n_expert, k);
    std::vector<double> covered(want.weights.size(), 0.0);
    for (uint32_t c = 0; c < chips; c++) {
        auto dids = alloc(rows, k, JAL_DT_I32);
        auto dw = alloc(rows, k);
        const jk::MoeRoutingConfig cfg{.n_expert = n_expert,
                                       .k = k,
                                       .block_rows = 4,
                                       .expert_base = c * local,
                                       .local_experts = local};
        run(jk::build_moe_routing(cfg), jk::moe_routing_args(cfg, dl.ref, dids.ref, dw.ref),
            slices(3));
        const auto ids = download_i32(dids.ref);
        const auto w = download(dw.ref);
        for (size_t i = 0; i < ids.size(); i++) {
            // The global id less the chip's first, as 32 bits (below it: a large unsigned).
            EXPECT_EQ(static_cast<uint32_t>(ids[i]), static_cast<uint32_t>(want.ids[i]) - c * local)
                << "chip " << c << " pair " << i;
            const bool here = static_cast<uint32_t>(want.ids[i]) / local == c;
            if (here) {
                EXPECT_NEAR(w[i], want.weights[i], 1e-7 + 1e-5 * want.weights[i]) << "pair " << i;
                covered[i] += 1;
            } else {
                EXPECT_EQ(w[i], 0.0f) << "chip " << c << " pair " << i;
            }
        }
    }
    for (size_t i = 0; i < covered.size(); i++) EXPECT_EQ(covered[i], 1.0) << "pair " << i;
}

TEST_F(TransformerMoeTest, CombineWeightsAndSumsEachTokensExperts)
{
    const uint32_t rows = 9, cols = 2880, k = 4;
    auto experts = jal::test::random_normal(size_t{rows} * k * cols, 33);
    auto weights = jal::test::random_uniform(size_t{rows} * k, 34, 0.0, 1.0);
    // expert rows 12 KiB apart with padding after each row
    auto de = upload(experts, rows * k, cols, cols * 4 + 256);
    auto dw = upload(weights, rows, k);
    auto dout = alloc(rows, cols);
    const jk::MoeCombineConfig cfg{.cols = cols, .k = k, .block_rows = 4};
    run(jk::build_moe_combine(cfg), jk::moe_combine_args(cfg, de.ref, dw.ref, dout.ref), slices(3));
    std::vector<double> want(size_t{rows} * cols), mag(want.size());
    for (uint32_t t = 0; t < rows; t++)
        for (uint32_t j = 0; j < k; j++)
            for (uint32_t c = 0; c < cols; c++) {
                const double term =
                    double{weights[t * k + j]} * experts[(size_t{t} * k + j) * cols + c];
                want[size_t{t} * cols + c] += term;
                mag[size_t{t} * cols + c] += std::fabs(term);
            }
    auto got = download(dout.ref);
    for (size_t i = 0; i < got.size(); i++)
        ASSERT_NEAR(got[i], want[i], 1e-6 + 1e-6 * mag[i]) << "element " << i;
}

TEST_F(TransformerMoeTest, CombineWithTheResidualIsBitForBitCombineThenAdd)
{
    // out += Σ w·e in the combine's epilogue against the combine then the elementwise add.
    const uint32_t rows = 5, cols = 2880, k = 4;
    auto experts = jal::test::random_normal(size_t{rows} * k * cols, 35);
    auto weights = jal::test::random_uniform(size_t{rows} * k, 36, 0.0, 1.0);
    auto resid = jal::test::random_normal(size_t{rows} * cols, 37);
    auto de = upload(experts, rows * k, cols);
    auto dw = upload(weights, rows, k);
    auto fused = upload(resid, rows, cols), unfused = upload(resid, rows, cols);
    auto moe = alloc(rows, cols);
    jk::MoeCombineConfig cfg{.cols = cols, .k = k, .block_rows = 2};
    run(jk::build_moe_combine(cfg), jk::moe_combine_args(cfg, de.ref, dw.ref, moe.ref), slices(2));
    const jk::ElementwiseConfig add{.cols = cols};
    run(jk::build_elementwise(add), jk::elementwise_args(add, unfused.ref, moe.ref, unfused.ref),
        slices(2));
    cfg.residual = true;
    run(jk::build_moe_combine(cfg), jk::moe_combine_args(cfg, de.ref, dw.ref, fused.ref),
        slices(2));
    const auto a = download(fused.ref), b = download(unfused.ref);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); i++)
        ASSERT_EQ(std::bit_cast<uint32_t>(float(a[i])), std::bit_cast<uint32_t>(float(b[i])))
            << "element " << i;
    // And it is the residual plus the reference sum.
    for (uint32_t t = 0; t < rows; t++)
        for (uint32_t c = 0; c < cols; c++) {
            double want = resid[size_t{t} * cols + c], mag = std::fabs(want);
            for (uint32_t j = 0; j < k; j++) {
                const double term =
                    double{weights[t * k + j]} * experts[(size_t{t} * k + j) * cols + c];
                want += term;
                mag += std::fabs(term);
            }
            ASSERT_NEAR(a[size_t{t} * cols + c], want, 1e-6 + 1e-6 * mag);
        }
}

TEST_F(TransformerMoeTest, CombineWithTheNormWritesTheRmsNormKernelsBf16Rows)
{
    // The combine that also normalises its rows (the next layer's q·k·v input in ggml
    // numerics): out bit for bit the plain combine's, normed bit for bit the rms_norm kernel's
    // BF16 rows of that out. Blocks of 2 rows over 2 slices: a slice runs several blocks.
    const uint32_t rows = 7, cols = 2880, k = 4;
    auto experts = jal::test::random_normal(size_t{rows} * k * cols, 38);
    auto weights = jal::test::random_uniform(size_t{rows} * k, 39, 0.0, 1.0);
    auto resid = jal::test::random_normal(size_t{rows} * cols, 40);
    auto normw = jal::test::random_uniform(cols, 41, 0.5, 1.5);
    auto de = upload(experts, rows * k, cols);
    auto dw = upload(weights, rows, k);
    auto dn = upload(normw, 1, cols);
    auto plain = upload(resid, rows, cols), fused = upload(resid, rows, cols);
    auto normed = alloc(rows, cols, JAL_DT_BF16), want = alloc(rows, cols, JAL_DT_BF16);
    jk::MoeCombineConfig cfg{.cols = cols, .k = k, .block_rows = 2, .residual = true};
    run(jk::build_moe_combine(cfg), jk::moe_combine_args(cfg, de.ref, dw.ref, plain.ref),
        slices(2));
    const jk::RmsNormConfig nc{.cols = cols, .out = JAL_DT_BF16, .out_mode = JAL_CVT_GGML};
    run(jk::build_rms_norm(nc), jk::rms_norm_args(nc, plain.ref, dn.ref, want.ref), slices(2));
    cfg.norm = true, cfg.norm_mode = JAL_CVT_GGML;
    run(jk::build_moe_combine(cfg),
        jk::moe_combine_args(cfg, de.ref, dw.ref, fused.ref, dn.ref, normed.ref), slices(2));
    const auto a = download(fused.ref), b = download(plain.ref);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); i++)
        ASSERT_EQ(std::bit_cast<uint32_t>(float(a[i])), std::bit_cast<uint32_t>(float(b[i])))
            << "element " << i;
    std::vector<uint16_t> got(size_t{rows} * cols), ref(got.size());
    read(got.data(), normed.ref.va, got.size() * 2);
    read(ref.data(), want.ref.va, ref.size() * 2);
    EXPECT_EQ(got, ref);
    // Not a pass by two untouched buffers.
    EXPECT_NE(std::count(got.begin(), got.end(), uint16_t{0}), std::ptrdiff_t(got.size()));
}
