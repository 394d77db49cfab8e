// Grouped expert GEMM (jal/kernels/library/expert_gemm.hpp) on a jal-emu against a
// double-precision host reference: up/gate (one x row per token) and down (one x row per
// selected pair) shapes, every numerics mode, experts over one slice and over several
// (some owning unselected experts), and a timing-only run.
//
// Reference: y[t·k+j][n] = Σ_k a[row][k]·W[e·N+n][k] + bias[e][n], e = ids[t][j], W decoded
// exactly and a = x rounded to the activation format on the host; tolerance as the GEMM
// test's: 1e-5 · (Σ|a·w| + |bias|) for F32 accumulation over K ≤ 128.
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <span>
#include <vector>

#include "linear_fixture.hpp"

#include <jal/kernels/library/expert_gemm.hpp>

namespace jl = jal::kernels::linear;
using jal::kernels::TensorRef;
using jal::test::HostMatrix;

namespace {

class LinearExpertTest : public jal::test::LinearKernelTest {
protected:
    static std::vector<uint8_t> packed_rows(const jl::ExpertGemmConfig& c,
                                            const std::vector<uint8_t>& w, uint64_t row_bytes,
                                            uint32_t nslices)
    {
        auto out = jl::pack_expert_rows(
            c, std::as_bytes(std::span<const uint8_t>(w.data(), w.size())), row_bytes, nslices);
        std::vector<uint8_t> bytes(out.size());
        std::memcpy(bytes.data(), out.data(), out.size());
        return bytes;
    }

    void check(const jl::ExpertGemmConfig& c, uint32_t nslices, uint64_t seed,
               bool timing_only = false)
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
        const bool by_rows = c.split == jl::ExpertSplit::rows;
        const uint64_t row_bytes = w.bytes.size() / (size_t{c.experts} * c.n);
        const std::vector<uint8_t> w_dev =
            by_rows ? packed_rows(c, w.bytes, row_bytes, nslices) : w.bytes;
        uint64_t x_va = upload(x.bytes), w_va = upload(w_dev), ids_va = upload(ids),
                 bias_va = upload(bias);
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

TEST_F(LinearExpertTest, BothSplitsGiveTheSameBits)
{
    // Each output element is one slice's dot product over all of K either way.
    jl::ExpertGemmConfig c{.tokens = 4, .k = 2, .experts = 5, .n = 48, .kdim = 64};
    const auto by_experts = result(c, 4, 60);
    c.split = jl::ExpertSplit::rows;
    EXPECT_EQ(result(c, 4, 60), by_experts);
    EXPECT_EQ(result(c, 6, 60), by_experts);
}

TEST_F(LinearExpertTest, TimingOnlyLeavesOutputUntouched)
{
    check({.tokens = 2, .k = 2, .experts = 4, .n = 32, .kdim = 64}, 2, 30, true);
}
