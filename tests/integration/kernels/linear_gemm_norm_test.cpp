// The GEMM and the expert GEMM with their RMS norm fused into the activation load
// (GemmConfig::rms_norm, ExpertGemmConfig::rms_norm) on a
// jal-emu: bit for bit what the rms_norm kernel followed by the plain GEMM gives (the model
// runtime's numerics do not change when it fuses), for every numerics mode, x resident and
// x staged and converted, several chunks of x; the rms_norm kernel's BF16 rows then the
// GEMM of BF16 rows likewise (ggml numerics); and, where activations stay F32, against a
// double-precision host reference of norm then product.
#include <cmath>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "linear_fixture.hpp"

#include <jal/kernels/library/elementwise.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/gemm.hpp>
#include <jal/kernels/library/norm.hpp>

namespace jl = jal::kernels::linear;
using jal::kernels::TensorRef;
using jal::test::HostMatrix;

namespace {

class LinearGemmNormTest : public jal::test::LinearKernelTest {
protected:
    struct Run {
        std::vector<uint32_t> fused, unfused;  // y bits
        std::vector<float> y;
    };

    // The rms_norm kernel of x into h: what the fused GEMM does in its activation load.
    void norm_kernel(const jal::kernels::RmsNormConfig& nc, const TensorRef& x, const TensorRef& nw,
                     const TensorRef& h, uint64_t mask)
    {
        EXPECT_EQ(
            run(jal::kernels::build_rms_norm(nc), jal::kernels::rms_norm_args(nc, x, nw, h), mask)
                .status,
            JAL_STATUS_OK);
    }
    // The GEMM of x into y, with no norm weights.
    void gemm(const jl::GemmConfig& c, const TensorRef& x, uint64_t table_va, uint64_t w_va,
              const TensorRef& y, uint64_t mask)
    {
        EXPECT_EQ(
            run(jl::build_gemm(c), jl::gemm_args(c, x, table_va, w.ref(w_va), {}, y), mask).status,
            JAL_STATUS_OK);
    }

    Run both(jl::GemmConfig c, uint32_t nslices, uint64_t seed)
    {
        SCOPED_TRACE(jl::gemm_name(c) + " on " + std::to_string(nslices) + " slices");
        xf = jal::test::random_floats(size_t{c.m} * c.k, seed, 3.0f);
        normw = jal::test::random_floats(c.k, seed + 1);
        w = jal::test::quantized(jal::test::random_floats(size_t{c.n} * c.k, seed + 2, 0.5f), c.n,
                                 c.k, c.weight);
        const uint64_t mask = slices(nslices);
        const uint64_t x_va = upload(xf), nw_va = upload(normw), w_va = upload(w.bytes);
        const uint64_t table_va = upload(jl::shard_table(w.ref(w_va), nslices));
        const TensorRef x{.va = x_va, .rows = c.m, .cols = c.k, .dtype = JAL_DT_F32};
        const TensorRef nw{.va = nw_va, .rows = 1, .cols = c.k, .dtype = JAL_DT_F32};
        const uint64_t bytes = size_t{c.m} * c.n * 4;
        const TensorRef y1{.va = output(bytes), .rows = c.m, .cols = c.n, .dtype = JAL_DT_F32};
        const TensorRef y2{.va = output(bytes), .rows = c.m, .cols = c.n, .dtype = JAL_DT_F32};

        // Unfused: rms_norm into h, then the GEMM of h.
        jal::kernels::RmsNormConfig nc;
        nc.cols = c.k;
        nc.eps = c.norm_eps;
        const TensorRef h{
            .va = output(size_t{c.m} * c.k * 4), .rows = c.m, .cols = c.k, .dtype = JAL_DT_F32};
        norm_kernel(nc, x, nw, h, mask);
        jl::GemmConfig plain = c;
        plain.rms_norm = false;
        gemm(plain, h, table_va, w_va, y1, mask);
        // Fused.
        c.rms_norm = true;
        EXPECT_EQ(
            run(jl::build_gemm(c), jl::gemm_args(c, x, table_va, w.ref(w_va), {}, y2, nw), mask)
                .status,
            JAL_STATUS_OK);
        Run r;
        r.y = read_f32(y2.va, size_t{c.m} * c.n);
        r.fused.resize(r.y.size());
        std::memcpy(r.fused.data(), r.y.data(), bytes);
        const auto u = read_f32(y1.va, size_t{c.m} * c.n);
        r.unfused.resize(u.size());
        std::memcpy(r.unfused.data(), u.data(), bytes);
        return r;
    }

    std::vector<float> xf, normw;
    HostMatrix w;
};

}  // namespace

TEST_F(LinearGemmNormTest, FusedIsBitForBitNormThenGemm)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml, jl::Numerics::fast})
        for (jal_dtype wt : {JAL_DT_MXFP4, JAL_DT_BF16}) {
            jl::GemmConfig c{.m = 3, .n = 40, .k = 96, .weight = wt, .numerics = n};
            const Run r = both(c, 3, 70);
            EXPECT_EQ(r.fused, r.unfused) << jl::gemm_name(c);
        }
}

TEST_F(LinearGemmNormTest, ManyChunksOfXStagedOrResident)
{
    // Small chunks force several passes over x (and several staging blocks when converted).
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml}) {
        jl::GemmConfig c{
            .m = 37, .n = 24, .k = 64, .weight = JAL_DT_MXFP4, .numerics = n, .max_m_chunk = 8};
        const Run r = both(c, 2, 80);
        EXPECT_EQ(r.fused, r.unfused) << jl::gemm_name(c);
    }
}

TEST_F(LinearGemmNormTest, RowGroupsGiveTheSameBits)
{
    // The fused norm in row groups (4 slices in 2 and 4 groups, chunks of 3): bit for bit
    // the unfused pair and the single-group GEMM.
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml})
        for (uint32_t groups : {2u, 4u}) {
            jl::GemmConfig one{
                .m = 21, .n = 24, .k = 64, .weight = JAL_DT_BF16, .numerics = n, .max_m_chunk = 3};
            jl::GemmConfig c = one;
            c.row_groups = groups;
            const Run r = both(c, 4, 90), r1 = both(one, 4, 90);
            EXPECT_EQ(r.fused, r.unfused) << jl::gemm_name(c);
            EXPECT_EQ(r.fused, r1.fused) << jl::gemm_name(c);
        }
}

TEST_F(LinearGemmNormTest, NormalisedBf16RowsGiveTheFusedBits)
{
    // ggml numerics with BF16 weights round the normalised rows to BF16 before the product:
    // the rms_norm kernel writing them as BF16 (the same VCVT), then the GEMM of those rows,
    // is bit for bit the fused GEMM (the model runtime's prompt q·k·v), in row groups too.
    for (uint32_t groups : {1u, 2u, 4u}) {
        jl::GemmConfig c{.m = 21,
                         .n = 24,
                         .k = 64,
                         .weight = JAL_DT_BF16,
                         .numerics = jl::Numerics::ggml,
                         .max_m_chunk = 3};
        c.row_groups = groups;
        const Run r = both(c, 4, 100);
        const uint64_t mask = slices(4);
        const TensorRef x{.va = upload(xf), .rows = c.m, .cols = c.k, .dtype = JAL_DT_F32};
        const TensorRef nw{.va = upload(normw), .rows = 1, .cols = c.k, .dtype = JAL_DT_F32};
        const uint64_t w_va = upload(w.bytes);
        const uint64_t table_va = upload(jl::shard_table(w.ref(w_va), 4));
        jal::kernels::RmsNormConfig nc;
        nc.cols = c.k, nc.eps = c.norm_eps;
        nc.out = JAL_DT_BF16, nc.out_mode = jl::activation_cvt_mode(c.numerics);
        const TensorRef h{
            .va = output(size_t{c.m} * c.k * 2), .rows = c.m, .cols = c.k, .dtype = JAL_DT_BF16};
        norm_kernel(nc, x, nw, h, mask);
        jl::GemmConfig b16 = c;
        b16.x_dtype = JAL_DT_BF16;
        const uint64_t bytes = size_t{c.m} * c.n * 4;
        const TensorRef y{.va = output(bytes), .rows = c.m, .cols = c.n, .dtype = JAL_DT_F32};
        gemm(b16, h, table_va, w_va, y, mask);
        const auto got = read_f32(y.va, size_t{c.m} * c.n);
        std::vector<uint32_t> bits(got.size());
        std::memcpy(bits.data(), got.data(), bytes);
        EXPECT_EQ(bits, r.fused) << jl::gemm_name(b16) << " in " << groups << " row groups";
    }
}

TEST_F(LinearGemmNormTest, AgreesWithADoubleReference)
{
    // F32 activations (native numerics, BF16 weights): y = (x / rms(x) · g) · Wᵀ in double.
    jl::GemmConfig c{.m = 4, .n = 33, .k = 128, .weight = JAL_DT_BF16};
    const Run r = both(c, 4, 90);
    int bad = 0;
    for (uint32_t m = 0; m < c.m; m++) {
        double ss = 0;
        for (uint32_t k = 0; k < c.k; k++) ss += double(xf[m * c.k + k]) * xf[m * c.k + k];
        const double scale = 1.0 / std::sqrt(ss / c.k + c.norm_eps);
        for (uint32_t n = 0; n < c.n; n++) {
            double ref = 0, mag = 0;
            for (uint32_t k = 0; k < c.k; k++) {
                const double p = xf[m * c.k + k] * scale * normw[k] * w.values[n * c.k + k];
                ref += p;
                mag += std::fabs(p);
            }
            const float got = r.y[m * c.n + n];
            if (!(std::fabs(got - ref) <= 1e-5 * mag) && bad++ < 5)
                ADD_FAILURE() << "y[" << m << "][" << n << "] = " << got << ", reference " << ref;
        }
    }
    EXPECT_EQ(bad, 0);
}

// The expert GEMM fused (norm of the gathered rows) against rms_norm then the plain expert
// GEMM, bits compared; both splits, every numerics mode the runtime uses.
class LinearExpertNormTest : public jal::test::LinearKernelTest {
protected:
    std::vector<uint32_t> run_case(jl::ExpertGemmConfig c, uint32_t nslices, bool fused)
    {
        const uint32_t pairs = c.tokens * c.k;
        std::vector<float> xf = jal::test::random_floats(size_t{c.tokens} * c.kdim, 5, 3.0f);
        std::vector<float> nwf = jal::test::random_floats(c.kdim, 6);
        HostMatrix w = jal::test::quantized(
            jal::test::random_floats(size_t{c.experts} * c.n * c.kdim, 7, 0.5f), c.experts * c.n,
            c.kdim, c.weight);
        std::vector<float> bias = jal::test::random_floats(size_t{c.experts} * c.n, 8);
        std::vector<int32_t> ids;
        for (uint32_t p = 0; p < pairs; p++)
            ids.push_back(static_cast<int32_t>((p * 7 + 3) % c.experts));
        const bool by_rows = c.split == jl::ExpertSplit::rows;
        const std::vector<uint8_t> wd =
            by_rows ? jal::test::packed_expert_rows(c, w.bytes, nslices) : w.bytes;
        const uint64_t mask = slices(nslices);
        const uint64_t x_va = upload(xf), nw_va = upload(nwf), w_va = upload(wd),
                       ids_va = upload(ids), bias_va = upload(bias);
        const uint64_t table_va =
            upload(by_rows ? jl::expert_row_shard_table(c, w.ref(w_va), nslices)
                           : jl::expert_shard_table(c, w.ref(w_va), nslices));
        TensorRef x{.va = x_va, .rows = c.tokens, .cols = c.kdim, .dtype = JAL_DT_F32};
        const TensorRef nw{.va = nw_va, .rows = 1, .cols = c.kdim, .dtype = JAL_DT_F32};
        if (!fused) {
            jal::kernels::RmsNormConfig nc;
            nc.cols = c.kdim;
            const TensorRef h{.va = output(size_t{c.tokens} * c.kdim * 4),
                              .rows = c.tokens,
                              .cols = c.kdim,
                              .dtype = JAL_DT_F32};
            EXPECT_EQ(run(jal::kernels::build_rms_norm(nc),
                          jal::kernels::rms_norm_args(nc, x, nw, h), mask)
                          .status,
                      JAL_STATUS_OK);
            x = h;
        }
        c.rms_norm = fused;
        const TensorRef y{
            .va = output(size_t{pairs} * c.n * 4), .rows = pairs, .cols = c.n, .dtype = JAL_DT_F32};
        auto words = jl::expert_gemm_args(
            c, x, {.va = ids_va, .rows = c.tokens, .cols = c.k, .dtype = JAL_DT_I32}, table_va,
            w.ref(w_va), {.va = bias_va, .rows = c.experts, .cols = c.n, .dtype = JAL_DT_F32}, y,
            nw);
        EXPECT_EQ(run(jl::build_expert_gemm(c), words, mask).status, JAL_STATUS_OK);
        auto yf = read_f32(y.va, size_t{pairs} * c.n);
        std::vector<uint32_t> bits(yf.size());
        std::memcpy(bits.data(), yf.data(), bits.size() * 4);
        return bits;
    }
};

TEST_F(LinearExpertNormTest, FusedIsBitForBitNormThenExpertGemm)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml})
        for (jl::ExpertSplit split : {jl::ExpertSplit::experts, jl::ExpertSplit::rows}) {
            jl::ExpertGemmConfig c{.tokens = 3,
                                   .k = 2,
                                   .experts = 5,
                                   .n = 40,
                                   .kdim = 64,
                                   .numerics = n,
                                   .split = split};
            SCOPED_TRACE(jl::expert_gemm_name(c));
            EXPECT_EQ(run_case(c, 3, true), run_case(c, 3, false));
        }
}

TEST_F(LinearExpertNormTest, FusedNormInStagedBlocks)
{
    // Enough pairs an expert for several staging blocks: still bit for bit norm then GEMM.
    for (jl::Numerics n : {jl::Numerics::ggml, jl::Numerics::fast}) {
        jl::ExpertGemmConfig c{
            .tokens = 40, .k = 2, .experts = 3, .n = 40, .kdim = 64, .numerics = n};
        SCOPED_TRACE(jl::expert_gemm_name(c));
        EXPECT_EQ(run_case(c, 2, true), run_case(c, 2, false));
    }
}

class LinearGemmAccumulateTest : public jal::test::LinearKernelTest {
protected:
    // y0 + x·Wᵀ + bias: accumulated in the GEMM's epilogue (fused) or a plain GEMM then the
    // elementwise add (unfused); y's bits.
    std::vector<uint32_t> run_case(jl::GemmConfig c, uint32_t nslices, bool fused,
                                   std::vector<float>* y_out = nullptr)
    {
        xf = jal::test::random_floats(size_t{c.m} * c.k, 11);
        y0 = jal::test::random_floats(size_t{c.m} * c.n, 12, 4.0f);
        bias = jal::test::random_floats(c.n, 13);
        w = jal::test::quantized(jal::test::random_floats(size_t{c.n} * c.k, 14, 0.5f), c.n, c.k,
                                 c.weight);
        const uint64_t mask = slices(nslices);
        const uint64_t w_va = upload(w.bytes);
        const uint64_t table_va = upload(jl::shard_table(w.ref(w_va), nslices));
        const TensorRef x{.va = upload(xf), .rows = c.m, .cols = c.k, .dtype = JAL_DT_F32};
        const TensorRef b{.va = upload(bias), .rows = 1, .cols = c.n, .dtype = JAL_DT_F32};
        const TensorRef y{.va = upload(y0), .rows = c.m, .cols = c.n, .dtype = JAL_DT_F32};
        c.bias = true;
        c.accumulate = fused;
        if (fused) {
            EXPECT_EQ(run(jl::build_gemm(c), jl::gemm_args(c, x, table_va, w.ref(w_va), b, y), mask)
                          .status,
                      JAL_STATUS_OK);
        } else {
            const TensorRef t{
                .va = output(size_t{c.m} * c.n * 4), .rows = c.m, .cols = c.n, .dtype = JAL_DT_F32};
            EXPECT_EQ(run(jl::build_gemm(c), jl::gemm_args(c, x, table_va, w.ref(w_va), b, t), mask)
                          .status,
                      JAL_STATUS_OK);
            jal::kernels::ElementwiseConfig e;
            e.cols = c.n;
            EXPECT_EQ(run(jal::kernels::build_elementwise(e),
                          jal::kernels::elementwise_args(e, y, t, y), mask)
                          .status,
                      JAL_STATUS_OK);
        }
        std::vector<float> out = read_f32(y.va, size_t{c.m} * c.n);
        if (y_out) *y_out = out;
        std::vector<uint32_t> bits(out.size());
        std::memcpy(bits.data(), out.data(), bits.size() * 4);
        return bits;
    }
    std::vector<float> xf, y0, bias;
    HostMatrix w;
};

TEST_F(LinearGemmAccumulateTest, EpilogueAddIsBitForBitGemmThenAdd)
{
    for (jl::Numerics n : {jl::Numerics::native, jl::Numerics::ggml})
        for (uint32_t m : {1u, 5u}) {
            jl::GemmConfig c{.m = m,
                             .n = 70,
                             .k = 64,
                             .weight = JAL_DT_BF16,
                             .numerics = n,
                             .tile_n = 16,
                             .max_m_chunk = 3};
            SCOPED_TRACE(jl::gemm_name(c));
            EXPECT_EQ(run_case(c, 3, true), run_case(c, 3, false));
        }
}

TEST_F(LinearGemmAccumulateTest, RowGroupsGiveTheSameBits)
{
    for (uint32_t groups : {2u, 3u}) {
        jl::GemmConfig c{.m = 7,
                         .n = 70,
                         .k = 64,
                         .weight = JAL_DT_BF16,
                         .tile_n = 16,
                         .row_groups = groups,
                         .max_m_chunk = 3};
        SCOPED_TRACE(jl::gemm_name(c));
        const auto fused = run_case(c, 6, true);
        EXPECT_EQ(fused, run_case(c, 6, false));
        c.row_groups = 1;
        EXPECT_EQ(fused, run_case(c, 6, true));
    }
}

TEST_F(LinearGemmAccumulateTest, AgreesWithADoubleReference)
{
    jl::GemmConfig c{.m = 2, .n = 45, .k = 96, .weight = JAL_DT_F32};
    std::vector<float> y;
    run_case(c, 4, true, &y);
    int bad = 0;
    for (uint32_t m = 0; m < c.m; m++)
        for (uint32_t n = 0; n < c.n; n++) {
            double ref = double(y0[m * c.n + n]) + bias[n];
            double mag = std::fabs(y0[m * c.n + n]) + std::fabs(bias[n]);
            for (uint32_t k = 0; k < c.k; k++) {
                const double p = double(xf[m * c.k + k]) * w.values[n * c.k + k];
                ref += p;
                mag += std::fabs(p);
            }
            if (!(std::fabs(y[m * c.n + n] - ref) <= 1e-5 * mag) && bad++ < 5)
                ADD_FAILURE() << "y[" << m << "][" << n << "] = " << y[m * c.n + n]
                              << ", reference " << ref;
        }
    EXPECT_EQ(bad, 0);
}
