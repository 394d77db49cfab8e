// Grouped expert GEMM (jal/kernels/library/expert_gemm.hpp) on a jal-emu against a
// double-precision host reference: up/gate (one x row per token) and down (one x row per
// selected pair) shapes, every numerics mode, experts over one slice and over several
// (some owning unselected experts), and a timing-only run.
//
// Reference: y[t·k+j][n] = Σ_k a[row][k]·W[e·N+n][k] + bias[e][n], e = ids[t][j], W decoded
// exactly and a = x rounded to the activation format on the host; tolerance as the GEMM
// test's: 1e-5 · (Σ|a·w| + |bias|) for F32 accumulation over K ≤ 128.
#include <bit>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <tuple>
#include <vector>

#include "linear_fixture.hpp"

#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/moe.hpp>
#include <jal/kernels/library/swiglu.hpp>

namespace jl = jal::kernels::linear;
using jal::kernels::TensorRef;
using jal::test::HostMatrix;

namespace {

class LinearExpertTest : public jal::test::LinearKernelTest {
protected:
    // invalid: the second pair's id is −1 and the last pair's E (no expert): the kernel
    // skips them and leaves their rows of y as they were.
    void check(const jl::ExpertGemmConfig& c, uint32_t nslices, uint64_t seed,
               bool timing_only = false, bool invalid = false)
    {
        SCOPED_TRACE(jl::expert_gemm_name(c) + " on " + std::to_string(nslices) + " slices");
        const uint32_t pairs = c.tokens * c.k, xrows = c.input_per_pair ? pairs : c.tokens;
        const jal_dtype act = jl::activation_dtype(c.weight, c.numerics);
        std::vector<float> xf = jal::test::random_floats(size_t{xrows} * c.kdim, seed);
        HostMatrix x = jal::test::quantized(xf, xrows, c.kdim, JAL_DT_F32);
        HostMatrix a =
            jal::test::quantized(xf, xrows, c.kdim, act, jl::activation_cvt_mode(c.numerics));
        HostMatrix w = jal::test::quantized(
            jal::test::random_floats(size_t{c.experts} * c.n * c.kdim, seed + 1, 0.5f),
            c.experts * c.n, c.kdim, c.weight);
        std::vector<float> bias = jal::test::random_floats(size_t{c.experts} * c.n, seed + 2);
        // k distinct experts per token.
        std::mt19937_64 rng(seed + 3);
        std::vector<int32_t> ids;
        for (uint32_t t = 0; t < c.tokens; t++) {
            std::vector<int32_t> all(c.experts);
            std::iota(all.begin(), all.end(), 0);
            std::shuffle(all.begin(), all.end(), rng);
            ids.insert(ids.end(), all.begin(), all.begin() + c.k);
        }
        if (invalid) ids[1] = -1, ids.back() = static_cast<int32_t>(c.experts);
        const bool by_rows = c.split == jl::ExpertSplit::rows;
        const std::vector<uint8_t> w_dev =
            by_rows ? jal::test::packed_expert_rows(c, w.bytes, nslices) : w.bytes;
        uint64_t x_va = upload(x.bytes), w_va = upload(w_dev), ids_va = upload(ids),
                 bias_va = c.bias_shards ? bias_table(c, bias, nslices) : upload(bias);
        uint64_t table_va = upload(by_rows ? jl::expert_row_shard_table(c, w.ref(w_va), nslices)
                                           : jl::expert_shard_table(c, w.ref(w_va), nslices));
        uint64_t y_va = output(size_t{pairs} * c.n * 4, 0x5a);
        auto words = jl::expert_gemm_args(
            c, x.ref(x_va),
            {.va = ids_va, .rows = c.tokens, .cols = c.k, .row_stride = 0, .dtype = JAL_DT_I32},
            table_va, w.ref(w_va),
            {.va = bias_va, .rows = c.experts, .cols = c.n, .row_stride = 0, .dtype = JAL_DT_F32},
            {.va = y_va, .rows = pairs, .cols = c.n, .row_stride = 0, .dtype = JAL_DT_F32});
        jal_dispatch_report r = run(jl::build_expert_gemm(c), words, slices(nslices), timing_only);
        EXPECT_EQ(r.status, JAL_STATUS_OK);
        if (timing_only) {
            EXPECT_GT(r.modelled_ns, 0u);
            EXPECT_EQ(read(y_va, size_t{pairs} * c.n * 4),
                      std::vector<uint8_t>(size_t{pairs} * c.n * 4, 0x5a));
            return;
        }
        std::vector<float> y = read_f32(y_va, size_t{pairs} * c.n);
        last_y_ = y;
        int bad = 0;
        for (uint32_t p = 0; p < pairs; p++) {
            const uint32_t e = static_cast<uint32_t>(ids[p]), row = c.input_per_pair ? p : p / c.k;
            if (e >= c.experts) {
                uint32_t untouched = 0;
                for (uint32_t n = 0; n < c.n; n++)
                    untouched += std::bit_cast<uint32_t>(y[size_t{p} * c.n + n]) == 0x5a5a5a5au;
                EXPECT_EQ(untouched, c.n) << "pair " << p << " has no expert";
                continue;
            }
            for (uint32_t n = 0; n < c.n; n++) {
                double ref = bias[size_t{e} * c.n + n], mag = std::fabs(ref);
                for (uint32_t k = 0; k < c.kdim; k++) {
                    double prod = double(a.values[size_t{row} * c.kdim + k]) *
                                  w.values[(size_t{e} * c.n + n) * c.kdim + k];
                    ref += prod;
                    mag += std::fabs(prod);
                }
                float got = y[size_t{p} * c.n + n];
                if (!(std::fabs(got - ref) <= 1e-5 * mag) && bad++ < 5)
                    ADD_FAILURE() << "pair " << p << " (expert " << e << ") column " << n << ": "
                                  << got << ", reference " << ref;
            }
        }
        EXPECT_EQ(bad, 0);
    }
    // ExpertGemmConfig::bias_shards: each slice's experts' bias rows in its own memory (no
    // whole table anywhere), and the table of per-slice addresses (entry + e·N·4 = row e).
    uint64_t bias_table(const jl::ExpertGemmConfig& c, const std::vector<float>& bias,
                        uint32_t nslices)
    {
        std::vector<uint64_t> table;
        const uint64_t mask = slices(nslices);
        uint32_t s = 0;
        for (uint32_t bit = 0; bit < 64; bit++) {
            if (!(mask & (1ull << bit))) continue;
            const jl::Range r = jl::slice_range(c.experts, nslices, s++);
            const uint64_t row = uint64_t{c.n} * 4;
            std::vector<uint8_t> part(std::max<uint64_t>(r.size() * row, 64));
            std::memcpy(part.data(), bias.data() + size_t{r.begin} * c.n, r.size() * row);
            const uint64_t va = upload(part.data(), part.size(), JAL_PLACE_SLICE, 1ull << bit);
            table.push_back(r.size() ? va - r.begin * row : 0);
        }
        return upload(table);
    }
    // y of a checked run (bit patterns, to compare runs exactly).
    std::vector<uint32_t> result(const jl::ExpertGemmConfig& c, uint32_t nslices, uint64_t seed)
    {
        last_y_.clear();
        check(c, nslices, seed);
        std::vector<uint32_t> bits(last_y_.size());
        std::memcpy(bits.data(), last_y_.data(), bits.size() * 4);
        return bits;
    }

private:
    std::vector<float> last_y_;
};

}  // namespace

TEST_F(LinearExpertTest, UpProjectionEveryNumerics)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast})
        check({.tokens = 5, .k = 2, .experts = 6, .n = 40, .kdim = 64, .numerics = n}, 4,
              10u + static_cast<unsigned>(n));
}

TEST_F(LinearExpertTest, ManyPairsAnExpertGatheredInStagedBlocks)
{
    // About 27 pairs an expert: split by experts with converted activations, a chunk's rows
    // are gathered and converted 8 at a time (the last block short); up and down.
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast})
        for (bool per_pair : {false, true})
            check({.tokens = 40,
                   .k = 2,
                   .experts = 3,
                   .n = 40,
                   .kdim = 64,
                   .numerics = n,
                   .input_per_pair = per_pair},
                  2, 90u + static_cast<unsigned>(n) + (per_pair ? 5u : 0u));
}

TEST_F(LinearExpertTest, F16AndQ8_0WeightsEveryNumerics)
{
    for (jal_dtype w : {JAL_DT_F16, JAL_DT_Q8_0})
        for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast})
            check({.tokens = 5,
                   .k = 2,
                   .experts = 6,
                   .n = 40,
                   .kdim = 64,
                   .weight = w,
                   .numerics = n},
                  4, 30u + w * 3u + static_cast<unsigned>(n));
}

TEST_F(LinearExpertTest, DownProjectionOneSliceAndMany)
{
    jl::ExpertGemmConfig c{.tokens = 3,
                           .k = 4,
                           .experts = 8,
                           .n = 33,
                           .kdim = 96,
                           .numerics = jl::Numerics::ggml,
                           .input_per_pair = true};
    check(c, 1, 20);
    check(c, 5, 21);
}

TEST_F(LinearExpertTest, SplitByRowsEveryNumericsAndShape)
{
    // N not a multiple of the slice count (uneven rows), more slices than some experts have
    // pairs, several pairs on one expert, and one slice owning every row.
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast})
        check({.tokens = 5,
               .k = 2,
               .experts = 6,
               .n = 40,
               .kdim = 64,
               .numerics = n,
               .split = jl::ExpertSplit::rows},
              7, 40u + static_cast<unsigned>(n));
    jl::ExpertGemmConfig down{.tokens = 3,
                              .k = 4,
                              .experts = 8,
                              .n = 33,
                              .kdim = 96,
                              .numerics = jl::Numerics::ggml,
                              .input_per_pair = true,
                              .split = jl::ExpertSplit::rows};
    check(down, 1, 50);
    check(down, 5, 51);
    down.weight = JAL_DT_BF16;
    check(down, 3, 52);
    // Rows of an expert wider than a W tile (256) on one slice: the per-expert loop; split
    // over two slices they fit and stream.
    jl::ExpertGemmConfig wide{
        .tokens = 2, .k = 2, .experts = 3, .n = 300, .kdim = 64, .split = jl::ExpertSplit::rows};
    check(wide, 1, 53);
    check(wide, 2, 54);
}

// Pairs whose id names no expert (the split over chips makes other chips' pairs so) are
// skipped: few pairs (sorted by one VTOPK), streamed over several slices and in the
// per-expert loop on one slice, and many pairs (the counting sort).
TEST_F(LinearExpertTest, SplitByRowsSkipsPairsWithoutAnExpert)
{
    jl::ExpertGemmConfig c{.tokens = 5,
                           .k = 2,
                           .experts = 6,
                           .n = 40,
                           .kdim = 64,
                           .numerics = jl::Numerics::ggml,
                           .split = jl::ExpertSplit::rows};
    check(c, 4, 70, false, true);
    c.input_per_pair = true;
    check(c, 3, 71, false, true);
    jl::ExpertGemmConfig wide{
        .tokens = 3, .k = 2, .experts = 4, .n = 300, .kdim = 64, .split = jl::ExpertSplit::rows};
    check(wide, 1, 72, false, true);
    c.tokens = 12;  // 24 pairs
    check(c, 4, 73, false, true);
}

TEST_F(LinearExpertTest, BothSplitsGiveTheSameBits)
{
    // Each output element is one slice's dot product over all of K either way.
    jl::ExpertGemmConfig c{.tokens = 4, .k = 2, .experts = 5, .n = 48, .kdim = 64};
    const auto by_experts = result(c, 4, 60);
    c.split = jl::ExpertSplit::rows;
    EXPECT_EQ(result(c, 4, 60), by_experts);
    EXPECT_EQ(result(c, 6, 60), by_experts);
}

// Per-slice bias tables (the model runtime's expert biases without the rows layout): each
// slice reads its experts' rows from its own memory, bit for bit what one whole table gives,
// for the up projection and the down projection, one slice and several (a slice with one
// expert, one with several), in both numerics.
TEST_F(LinearExpertTest, PerSliceBiasTablesGiveTheBitsOfOneTable)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml})
        for (uint32_t nslices : {1u, 3u}) {
            jl::ExpertGemmConfig c{
                .tokens = 6, .k = 2, .experts = 5, .n = 48, .kdim = 64, .numerics = n};
            const auto whole = result(c, nslices, 80);
            c.bias_shards = true;
            EXPECT_EQ(result(c, nslices, 80), whole) << nslices << " slices";
        }
    jl::ExpertGemmConfig down{.tokens = 4, .k = 3, .experts = 6, .n = 40, .kdim = 64};
    down.input_per_pair = true;
    const auto whole = result(down, 4, 81);
    down.bias_shards = true;
    EXPECT_EQ(result(down, 4, 81), whole);
    down.split = jl::ExpertSplit::rows;  // the rows' bias gather needs the whole table
    EXPECT_THROW(jl::build_expert_gemm(down), jal::Error);
}

TEST_F(LinearExpertTest, ChunksWithTheNextGatherInFlightGiveTheBitsOfTheSplitByRows)
{
    // An accumulator of 8 192 columns leaves L1 for ~125 pairs a chunk, so the ~133 pairs of
    // each expert take two: split by experts (converted activations) each chunk's gather is
    // issued before the previous chunk's epilogue and scatter, within an expert and from one
    // expert to the next; split by rows each chunk is gathered in turn. Native numerics
    // gather x as the MMA reads it (two buffers), ggml's stage and convert it.
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml}) {
        jl::ExpertGemmConfig c{
            .tokens = 200, .k = 2, .experts = 3, .n = 8192, .kdim = 64, .numerics = n};
        const auto by_experts = result(c, 1, 70);
        EXPECT_EQ(result(c, 2, 70), by_experts);
        c.split = jl::ExpertSplit::rows;
        EXPECT_EQ(result(c, 1, 70), by_experts);
    }
}

TEST_F(LinearExpertTest, TimingOnlyLeavesOutputUntouched)
{
    check({.tokens = 2, .k = 2, .experts = 4, .n = 32, .kdim = 64}, 2, 30, true);
}

// The down projection with the SwiGLU fused into its activation load gives the bits of the
// swiglu_oai kernel followed by the plain expert GEMM: the same instructions on the same
// values. Gate and up values cross the limit (7) on both sides. Split by rows streaming
// and not (N wider than a W tile on one slice), and split by experts.
TEST_F(LinearExpertTest, FusedSwigluGivesTheBitsOfTheSwigluKernelThenTheGemm)
{
    for (const auto& [split, n, nslices] :
         {std::tuple{jl::ExpertSplit::rows, 33u, 5u}, std::tuple{jl::ExpertSplit::rows, 300u, 1u},
          std::tuple{jl::ExpertSplit::experts, 33u, 3u}}) {
        jl::ExpertGemmConfig c{.tokens = 2,
                               .k = 4,
                               .experts = 8,
                               .n = n,
                               .kdim = 96,
                               .input_per_pair = true,
                               .split = split};
        SCOPED_TRACE(jl::expert_gemm_name(c) + " on " + std::to_string(nslices) + " slices");
        const uint32_t pairs = c.tokens * c.k, K = c.kdim;
        std::vector<float> gu = jal::test::random_floats(size_t{pairs} * 2 * K, 70, 12.0f);
        HostMatrix w =
            jal::test::quantized(jal::test::random_floats(size_t{c.experts} * c.n * K, 71, 0.5f),
                                 c.experts * c.n, K, c.weight);
        std::vector<float> bias = jal::test::random_floats(size_t{c.experts} * c.n, 72);
        std::vector<int32_t> ids;
        for (uint32_t p = 0; p < pairs; p++)
            ids.push_back(static_cast<int32_t>((p * 3) % c.experts));
        const bool by_rows = split == jl::ExpertSplit::rows;
        const uint64_t w_va =
            upload(by_rows ? jal::test::packed_expert_rows(c, w.bytes, nslices) : w.bytes);
        const uint64_t gu_va = upload(gu), ids_va = upload(ids), bias_va = upload(bias);
        const uint64_t table_va =
            upload(by_rows ? jl::expert_row_shard_table(c, w.ref(w_va), nslices)
                           : jl::expert_shard_table(c, w.ref(w_va), nslices));
        const uint64_t act_va = output(size_t{pairs} * K * 4);
        const TensorRef ids_ref{.va = ids_va, .rows = c.tokens, .cols = c.k, .dtype = JAL_DT_I32};
        const TensorRef bias_ref{
            .va = bias_va, .rows = c.experts, .cols = c.n, .dtype = JAL_DT_F32};
        auto gemm = [&](const jl::ExpertGemmConfig& cfg, const TensorRef& x) {
            const uint64_t y_va = output(size_t{pairs} * c.n * 4);
            const TensorRef y{.va = y_va, .rows = pairs, .cols = c.n, .dtype = JAL_DT_F32};
            EXPECT_EQ(run(jl::build_expert_gemm(cfg),
                          jl::expert_gemm_args(cfg, x, ids_ref, table_va, w.ref(w_va), bias_ref, y),
                          slices(nslices))
                          .status,
                      JAL_STATUS_OK);
            return read(y_va, size_t{pairs} * c.n * 4);
        };
        // Separate: the SwiGLU kernel writes act, the GEMM reads it.
        jal::kernels::SwigluConfig sw;
        sw.cols = K;
        const TensorRef gate{
            .va = gu_va, .rows = pairs, .cols = K, .row_stride = 2 * K * 4, .dtype = JAL_DT_F32};
        TensorRef up = gate;
        up.va += K * 4;
        const TensorRef act{.va = act_va, .rows = pairs, .cols = K, .dtype = JAL_DT_F32};
        ASSERT_EQ(run(jal::kernels::build_swiglu_oai(sw),
                      jal::kernels::swiglu_oai_args(sw, gate, up, act), slices(1))
                      .status,
                  JAL_STATUS_OK);
        const std::vector<uint8_t> separate = gemm(c, act);
        // Fused: the GEMM reads gate | up.
        jl::ExpertGemmConfig fused = c;
        fused.swiglu_input = true;
        const std::vector<uint8_t> got =
            gemm(fused, {.va = gu_va, .rows = pairs, .cols = 2 * K, .dtype = JAL_DT_F32});
        EXPECT_EQ(got, separate);
    }
}

// The gate|up projection with the routing fused in gives the ids, weights and outputs of
// the moe_routing kernel followed by the plain expert GEMM. Logits with ties (the lowest
// index wins). Split by rows streaming and not, and split by experts.
TEST_F(LinearExpertTest, FusedRoutingGivesTheBitsOfTheRoutingKernelThenTheGemm)
{
    for (const auto& [split, n, nslices] :
         {std::tuple{jl::ExpertSplit::rows, 40u, 7u}, std::tuple{jl::ExpertSplit::rows, 300u, 1u},
          std::tuple{jl::ExpertSplit::experts, 40u, 3u}}) {
        jl::ExpertGemmConfig c{
            .tokens = 2, .k = 4, .experts = 16, .n = n, .kdim = 64, .split = split};
        SCOPED_TRACE(jl::expert_gemm_name(c) + " on " + std::to_string(nslices) + " slices");
        const uint32_t pairs = c.tokens * c.k;
        std::vector<float> logits =
            jal::test::random_floats(size_t{c.tokens} * c.experts, 80, 3.0f);
        logits[5] = logits[9];  // a tie
        HostMatrix x = jal::test::quantized(jal::test::random_floats(size_t{c.tokens} * c.kdim, 81),
                                            c.tokens, c.kdim, JAL_DT_F32);
        HostMatrix w = jal::test::quantized(
            jal::test::random_floats(size_t{c.experts} * c.n * c.kdim, 82, 0.5f), c.experts * c.n,
            c.kdim, c.weight);
        std::vector<float> bias = jal::test::random_floats(size_t{c.experts} * c.n, 83);
        const bool by_rows = split == jl::ExpertSplit::rows;
        const uint64_t w_va =
            upload(by_rows ? jal::test::packed_expert_rows(c, w.bytes, nslices) : w.bytes);
        const uint64_t x_va = upload(x.bytes), logits_va = upload(logits), bias_va = upload(bias);
        const uint64_t table_va =
            upload(by_rows ? jl::expert_row_shard_table(c, w.ref(w_va), nslices)
                           : jl::expert_shard_table(c, w.ref(w_va), nslices));
        const TensorRef logits_ref{
            .va = logits_va, .rows = c.tokens, .cols = c.experts, .dtype = JAL_DT_F32};
        const TensorRef bias_ref{
            .va = bias_va, .rows = c.experts, .cols = c.n, .dtype = JAL_DT_F32};
        struct Out {
            std::vector<uint8_t> ids, weights, y;
        };
        auto gemm = [&](const jl::ExpertGemmConfig& cfg, bool route_first) {
            const uint64_t ids_va = output(size_t{pairs} * 4), wts_va = output(size_t{pairs} * 4),
                           y_va = output(size_t{pairs} * c.n * 4);
            const TensorRef ids{.va = ids_va, .rows = c.tokens, .cols = c.k, .dtype = JAL_DT_I32};
            const TensorRef wts{.va = wts_va, .rows = c.tokens, .cols = c.k, .dtype = JAL_DT_F32};
            if (route_first) {
                jal::kernels::MoeRoutingConfig rc{.n_expert = c.experts, .k = c.k};
                EXPECT_EQ(run(jal::kernels::build_moe_routing(rc),
                              jal::kernels::moe_routing_args(rc, logits_ref, ids, wts), slices(1))
                              .status,
                          JAL_STATUS_OK);
            }
            const TensorRef y{.va = y_va, .rows = pairs, .cols = c.n, .dtype = JAL_DT_F32};
            EXPECT_EQ(run(jl::build_expert_gemm(cfg),
                          jl::expert_gemm_args(cfg, x.ref(x_va), ids, table_va, w.ref(w_va),
                                               bias_ref, y, {}, logits_ref, wts),
                          slices(nslices))
                          .status,
                      JAL_STATUS_OK);
            return Out{read(ids_va, pairs * 4), read(wts_va, pairs * 4),
                       read(y_va, size_t{pairs} * c.n * 4)};
        };
        const Out separate = gemm(c, true);
        jl::ExpertGemmConfig fused = c;
        fused.route = true;
        const Out got = gemm(fused, false);
        EXPECT_EQ(got.ids, separate.ids);
        EXPECT_EQ(got.weights, separate.weights);
        EXPECT_EQ(got.y, separate.y);
    }
}

// The down projection with the combine and its residual fused in leaves in `out` the bits
// of the plain expert GEMM followed by moe_combine (residual): x + ((w0·e0 + w1·e1) + ...).
// Several tokens, an uneven column split; a slice that cannot stream traps.
TEST_F(LinearExpertTest, FusedCombineGivesTheBitsOfTheGemmThenTheCombine)
{
    jl::ExpertGemmConfig c{.tokens = 2,
                           .k = 4,
                           .experts = 8,
                           .n = 33,
                           .kdim = 64,
                           .input_per_pair = true,
                           .split = jl::ExpertSplit::rows};
    const uint32_t pairs = c.tokens * c.k, nslices = 5;
    HostMatrix a = jal::test::quantized(jal::test::random_floats(size_t{pairs} * c.kdim, 90), pairs,
                                        c.kdim, JAL_DT_F32);
    HostMatrix w =
        jal::test::quantized(jal::test::random_floats(size_t{c.experts} * c.n * c.kdim, 91, 0.5f),
                             c.experts * c.n, c.kdim, c.weight);
    std::vector<float> bias = jal::test::random_floats(size_t{c.experts} * c.n, 92);
    std::vector<float> wts = jal::test::random_floats(pairs, 93);
    const std::vector<float> x0 = jal::test::random_floats(size_t{c.tokens} * c.n, 94);
    std::vector<int32_t> ids = {3, 0, 7, 5, 5, 1, 2, 6};
    const uint64_t w_va = upload(jal::test::packed_expert_rows(c, w.bytes, nslices));
    const uint64_t a_va = upload(a.bytes), ids_va = upload(ids), bias_va = upload(bias),
                   wts_va = upload(wts);
    const uint64_t table_va = upload(jl::expert_row_shard_table(c, w.ref(w_va), nslices));
    const TensorRef ids_ref{.va = ids_va, .rows = c.tokens, .cols = c.k, .dtype = JAL_DT_I32};
    const TensorRef bias_ref{.va = bias_va, .rows = c.experts, .cols = c.n, .dtype = JAL_DT_F32};
    const TensorRef wts_ref{.va = wts_va, .rows = c.tokens, .cols = c.k, .dtype = JAL_DT_F32};
    const uint64_t y_va = output(size_t{pairs} * c.n * 4);
    const TensorRef y{.va = y_va, .rows = pairs, .cols = c.n, .dtype = JAL_DT_F32};
    auto x_out = [&] {
        const uint64_t va = upload(x0);
        return TensorRef{.va = va, .rows = c.tokens, .cols = c.n, .dtype = JAL_DT_F32};
    };
    // Separate: the GEMM writes y, the combine adds it into x.
    const TensorRef xs = x_out();
    ASSERT_EQ(run(jl::build_expert_gemm(c),
                  jl::expert_gemm_args(c, a.ref(a_va), ids_ref, table_va, w.ref(w_va), bias_ref, y),
                  slices(nslices))
                  .status,
              JAL_STATUS_OK);
    jal::kernels::MoeCombineConfig mc{.cols = c.n, .k = c.k, .residual = true};
    ASSERT_EQ(run(jal::kernels::build_moe_combine(mc),
                  jal::kernels::moe_combine_args(mc, y, wts_ref, xs), slices(1))
                  .status,
              JAL_STATUS_OK);
    // Fused.
    jl::ExpertGemmConfig fused = c;
    fused.combine = true;
    const TensorRef xf = x_out();
    const auto words = jl::expert_gemm_args(fused, a.ref(a_va), ids_ref, table_va, w.ref(w_va),
                                            bias_ref, y, {}, {}, wts_ref, xf);
    ASSERT_EQ(run(jl::build_expert_gemm(fused), words, slices(nslices)).status, JAL_STATUS_OK);
    EXPECT_EQ(read(xf.va, size_t{c.tokens} * c.n * 4), read(xs.va, size_t{c.tokens} * c.n * 4));
    EXPECT_NE(read(xf.va, size_t{c.tokens} * c.n * 4),
              std::vector<uint8_t>(reinterpret_cast<const uint8_t*>(x0.data()),
                                   reinterpret_cast<const uint8_t*>(x0.data() + x0.size())))
        << "out was added to";
    // Rows of an expert wider than a W tile on one slice: no streaming, so it traps (after
    // the sort, before any W is read).
    jl::ExpertGemmConfig wide = fused;
    wide.n = 300;
    try {
        run(jl::build_expert_gemm(wide),
            jl::expert_gemm_args(wide, a.ref(a_va), ids_ref, table_va, w.ref(w_va),
                                 {.va = bias_va, .rows = c.experts, .cols = 300},
                                 {.va = y_va, .rows = pairs, .cols = 300}, {}, {}, wts_ref,
                                 {.va = xf.va, .rows = c.tokens, .cols = 300}),
            slices(1));
        ADD_FAILURE() << "no trap";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_INVALID_FIELD) << e.what();
    }
}
