// The expert GEMM with GPT-OSS's SwiGLU in its epilogue (ExpertGemmConfig::swiglu) on a
// jal-emu: bit for bit the expert GEMM of gate | up rows followed by the swiglu_oai kernel
// (the model runtime's numerics do not change when it fuses), and against a double-precision
// host reference of x·Wᵀ + bias then the clamped SwiGLU; and the hand-over of the SwiGLU
// rows already in the down projection's activation format (y_dtype, x_dtype).
#include <algorithm>
#include <cmath>
#include <cstring>
#include <span>
#include <vector>

#include "linear_fixture.hpp"

#include <jal/isa/numerics.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/swiglu.hpp>

namespace jl = jal::kernels::linear;
using jal::kernels::TensorRef;
using jal::test::HostMatrix;

namespace {

class LinearExpertSwigluTest : public jal::test::LinearKernelTest {
protected:
    // y (pairs × N/2) of the fused kernel or of the expert GEMM then swiglu_oai.
    std::vector<float> run_case(jl::ExpertGemmConfig c, uint32_t nslices, bool fused)
    {
        const uint32_t pairs = c.tokens * c.k, F = c.n / 2;
        xf = jal::test::random_floats(size_t{c.tokens} * c.kdim, 5, 2.0f);
        w = jal::test::quantized(
            jal::test::random_floats(size_t{c.experts} * c.n * c.kdim, 7, 1.5f), c.experts * c.n,
            c.kdim, c.weight);
        bias = jal::test::random_floats(size_t{c.experts} * c.n, 8, 4.0f);
        ids.clear();
        for (uint32_t p = 0; p < pairs; p++)
            ids.push_back(static_cast<int32_t>((p * 7 + 3) % c.experts));
        const uint64_t mask = slices(nslices);
        c.swiglu = fused;
        // Split by rows, W packed in the halves layout (pack_expert_rows with the SwiGLU).
        const bool by_rows = c.split == jl::ExpertSplit::rows;
        const uint64_t w_va =
            upload(by_rows ? jal::test::packed_expert_rows(c, w.bytes, nslices) : w.bytes);
        const uint64_t table_va =
            upload(by_rows ? jl::expert_row_shard_table(c, w.ref(w_va), nslices)
                           : jl::expert_shard_table(c, w.ref(w_va), nslices));
        const TensorRef x{.va = upload(xf), .rows = c.tokens, .cols = c.kdim, .dtype = JAL_DT_F32};
        const TensorRef tids{.va = upload(ids), .rows = c.tokens, .cols = c.k, .dtype = JAL_DT_I32};
        const TensorRef tb{.va = upload(bias), .rows = c.experts, .cols = c.n, .dtype = JAL_DT_F32};
        const TensorRef y{
            .va = output(size_t{pairs} * F * 4), .rows = pairs, .cols = F, .dtype = JAL_DT_F32};
        if (fused) {
            EXPECT_EQ(run(jl::build_expert_gemm(c),
                          jl::expert_gemm_args(c, x, tids, table_va, w.ref(w_va), tb, y), mask)
                          .status,
                      JAL_STATUS_OK);
        } else {
            const TensorRef gu{.va = output(size_t{pairs} * c.n * 4),
                               .rows = pairs,
                               .cols = c.n,
                               .dtype = JAL_DT_F32};
            EXPECT_EQ(run(jl::build_expert_gemm(c),
                          jl::expert_gemm_args(c, x, tids, table_va, w.ref(w_va), tb, gu), mask)
                          .status,
                      JAL_STATUS_OK);
            jal::kernels::SwigluConfig sc;
            sc.cols = F;
            TensorRef gate = gu, up = gu;
            gate.cols = up.cols = F;
            gate.row_stride = up.row_stride = uint64_t{c.n} * 4;
            up.va += uint64_t{F} * 4;
            EXPECT_EQ(run(jal::kernels::build_swiglu_oai(sc),
                          jal::kernels::swiglu_oai_args(sc, gate, up, y), mask)
                          .status,
                      JAL_STATUS_OK);
        }
        return read_f32(y.va, size_t{pairs} * F);
    }
    std::vector<float> xf, bias;
    std::vector<int32_t> ids;
    HostMatrix w;
};

std::vector<uint32_t> bits_of(const std::vector<float>& v)
{
    std::vector<uint32_t> b(v.size());
    std::memcpy(b.data(), v.data(), b.size() * 4);
    return b;
}

}  // namespace

TEST_F(LinearExpertSwigluTest, EpilogueIsBitForBitExpertGemmThenSwiglu)
{
    // 5 and 40 tokens (one staging block an expert, and several), every numerics mode.
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast})
        for (uint32_t tokens : {5u, 40u}) {
            jl::ExpertGemmConfig c{
                .tokens = tokens, .k = 2, .experts = 3, .n = 48, .kdim = 64, .numerics = n};
            SCOPED_TRACE(jl::expert_gemm_name(c));
            EXPECT_EQ(bits_of(run_case(c, 2, true)), bits_of(run_case(c, 2, false)));
        }
}

TEST_F(LinearExpertSwigluTest, EpilogueIsBitForBitWhenAnExpertTakesSeveralChunks)
{
    // 256 pairs of one expert with 4096 accumulator columns: more rows than L1 holds at once,
    // so the expert's pairs run in several chunks, each adding the bias row after the
    // previous chunk's SwiGLU used its tile as scratch.
    jl::ExpertGemmConfig c{.tokens = 256, .k = 1, .experts = 1, .n = 4096, .kdim = 512};
    EXPECT_EQ(bits_of(run_case(c, 2, true)), bits_of(run_case(c, 2, false)));
}

TEST_F(LinearExpertSwigluTest, AgreesWithADoubleReference)
{
    // F32 activations (native numerics): g | u = x·Wᵀ + bias in double, then
    // min(g,7)·σ(1.702·min(g,7))·(clamp(u,±7)+1). Values past ±7 occur (x and W are wide).
    jl::ExpertGemmConfig c{.tokens = 9, .k = 2, .experts = 3, .n = 40, .kdim = 64};
    const std::vector<float> y = run_case(c, 3, true);
    const uint32_t F = c.n / 2;
    int bad = 0, clamped = 0;
    for (uint32_t p = 0; p < c.tokens * c.k; p++) {
        const uint32_t e = static_cast<uint32_t>(ids[p]), t = p / c.k;
        auto dot = [&](uint32_t row, double& mag) {
            double s = bias[size_t{e} * c.n + row];
            mag = std::fabs(s);
            for (uint32_t k = 0; k < c.kdim; k++) {
                const double v = double(xf[size_t{t} * c.kdim + k]) *
                                 w.values[(size_t{e} * c.n + row) * c.kdim + k];
                s += v;
                mag += std::fabs(v);
            }
            return s;
        };
        for (uint32_t f = 0; f < F; f++) {
            double mg = 0, mu = 0;
            const double g = std::min(dot(f, mg), 7.0);
            const double u = std::clamp(dot(F + f, mu), -7.0, 7.0);
            clamped += g == 7.0 || std::fabs(u) == 7.0;
            const double want = g / (1 + std::exp(-1.702 * g)) * (u + 1);
            // The products' roundings (1e-5·Σ|…|, as the GEMM tests) carried through the
            // SwiGLU (|d/dg| and |d/du| stay below 9 in this range) and σ's 2 ulp.
            const double tol = 1e-4 * (mg + mu) * 9 + 1e-5 * std::fabs(want) + 1e-6;
            const float got = y[size_t{p} * F + f];
            if (!(std::fabs(got - want) <= tol) && bad++ < 5)
                ADD_FAILURE() << "y[" << p << "][" << f << "] = " << got << ", reference " << want;
        }
    }
    EXPECT_EQ(bad, 0);
    EXPECT_GT(clamped, 0) << "no value reached the clamp";
}

TEST_F(LinearExpertSwigluTest, HandsOverRowsInTheActivationFormat)
{
    // ggml numerics, MXFP4 experts: gate|up with the SwiGLU stores its rows as Q8_0 (what the
    // down projection would round them to) and down gathers them as they are. The Q8_0 rows
    // are the host's rounding of the F32 ones, and down's output is bit for bit the F32
    // hand-over's.
    const jl::Numerics n = jl::Numerics::ggml;
    jl::ExpertGemmConfig up{
        .tokens = 40, .k = 2, .experts = 3, .n = 64, .kdim = 64, .numerics = n, .swiglu = true};
    const uint32_t pairs = up.tokens * up.k, F = up.n / 2;
    const jal_dtype act = jl::activation_dtype(up.weight, n);
    ASSERT_EQ(act, JAL_DT_Q8_0);
    xf = jal::test::random_floats(size_t{up.tokens} * up.kdim, 15, 2.0f);
    w = jal::test::quantized(jal::test::random_floats(size_t{up.experts} * up.n * up.kdim, 16),
                             up.experts * up.n, up.kdim, up.weight);
    HostMatrix wd = jal::test::quantized(jal::test::random_floats(size_t{up.experts} * F * F, 17),
                                         up.experts * F, F, up.weight);
    bias = jal::test::random_floats(size_t{up.experts} * up.n, 18);
    ids.clear();
    for (uint32_t p = 0; p < pairs; p++) ids.push_back(static_cast<int32_t>((p * 5 + 1) % 3));
    const uint64_t mask = slices(2);
    const uint64_t w_va = upload(w.bytes), wd_va = upload(wd.bytes);
    const uint64_t up_table = upload(jl::expert_shard_table(up, w.ref(w_va), 2));
    jl::ExpertGemmConfig down{.tokens = up.tokens,
                              .k = up.k,
                              .experts = up.experts,
                              .n = F,
                              .kdim = F,
                              .numerics = n,
                              .bias = false,
                              .input_per_pair = true};
    const uint64_t down_table = upload(jl::expert_shard_table(down, wd.ref(wd_va), 2));
    const TensorRef x{.va = upload(xf), .rows = up.tokens, .cols = up.kdim, .dtype = JAL_DT_F32};
    const TensorRef tids{.va = upload(ids), .rows = up.tokens, .cols = up.k, .dtype = JAL_DT_I32};
    const TensorRef tb{.va = upload(bias), .rows = up.experts, .cols = up.n, .dtype = JAL_DT_F32};
    std::vector<float> out[2];
    std::vector<uint8_t> handed;
    std::vector<float> act_f32;
    for (int q = 0; q < 2; q++) {  // 0: F32 rows between the two, 1: Q8_0 rows
        jl::ExpertGemmConfig u = up, d = down;
        u.y_dtype = d.x_dtype = q ? act : JAL_DT_F32;
        const uint64_t row = jal::numerics::row_bytes(u.y_dtype, F);
        const TensorRef mid{
            .va = output(pairs * row), .rows = pairs, .cols = F, .dtype = u.y_dtype};
        const TensorRef y{
            .va = output(size_t{pairs} * F * 4), .rows = pairs, .cols = F, .dtype = JAL_DT_F32};
        EXPECT_EQ(run(jl::build_expert_gemm(u),
                      jl::expert_gemm_args(u, x, tids, up_table, w.ref(w_va), tb, mid), mask)
                      .status,
                  JAL_STATUS_OK);
        EXPECT_EQ(run(jl::build_expert_gemm(d),
                      jl::expert_gemm_args(d, mid, tids, down_table, wd.ref(wd_va), {}, y), mask)
                      .status,
                  JAL_STATUS_OK);
        out[q] = read_f32(y.va, size_t{pairs} * F);
        if (q == 0) act_f32 = read_f32(mid.va, size_t{pairs} * F);
        if (q == 1) handed = read(mid.va, pairs * row);
    }
    EXPECT_EQ(bits_of(out[0]), bits_of(out[1]));
    std::vector<uint8_t> want(handed.size());
    const uint64_t row = jal::numerics::row_bytes(act, F);
    for (uint32_t p = 0; p < pairs; p++)
        jal::numerics::quantize_row(act, act_f32.data() + size_t{p} * F, want.data() + p * row, F,
                                    jl::activation_cvt_mode(n));
    EXPECT_EQ(handed, want);
}

// Split by rows (the decode path): each slice holds its gate rows and the matching up rows
// (the halves layout) and stores its share of the SwiGLU's columns. Bit for bit the expert
// GEMM split by experts then swiglu_oai: few pairs and many (both sorts), shares of 24, 16,
// 12 and 10/8 columns, every numerics.
TEST_F(LinearExpertSwigluTest, SplitByRowsIsBitForBitExpertGemmThenSwiglu)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast})
        for (uint32_t tokens : {5u, 9u})
            for (uint32_t nslices : {2u, 3u, 4u, 5u}) {
                jl::ExpertGemmConfig c{
                    .tokens = tokens, .k = 2, .experts = 3, .n = 48, .kdim = 64, .numerics = n};
                SCOPED_TRACE(jl::expert_gemm_name(c) + " on " + std::to_string(nslices));
                const std::vector<float> separate = run_case(c, nslices, false);
                c.split = jl::ExpertSplit::rows;
                EXPECT_EQ(bits_of(run_case(c, nslices, true)), bits_of(separate));
            }
}

TEST_F(LinearExpertSwigluTest, RefusesWhatTheHalvesCannotHold)
{
    jl::ExpertGemmConfig c{.tokens = 2, .k = 2, .experts = 3, .n = 41, .kdim = 64, .swiglu = true};
    EXPECT_THROW(jl::build_expert_gemm(c), jal::Error);  // N odd
    c.n = 42, c.split = jl::ExpertSplit::rows;
    // 4 slices take 11, 11, 11 and 9 rows: a share that is not gate and up halves.
    const std::vector<std::byte> w(size_t{c.experts} * c.n * 64);
    EXPECT_THROW(jl::pack_expert_rows(c, w, 64, 4), jal::Error);
    c.input_per_pair = true, c.combine = true;
    EXPECT_THROW(jl::build_expert_gemm(c), jal::Error);  // not with the fused combine
}
