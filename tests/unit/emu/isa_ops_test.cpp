// The remaining tile operations: gathers, conversions, MMA with block-format weights, the
// elementwise ops not covered elsewhere, and timing-only mode's promise to touch no data.
#include "isa_harness.hpp"

#include <jal/isa/numerics.hpp>

#include <cmath>
#include <random>

using namespace isatest;

namespace {

class IsaOps : public IsaTest {
protected:
    void SetUp() override { map(0, 4, 0); }
    Opts opts() const
    {
        Opts o;
        o.args = kVa;
        return o;
    }
};

std::vector<std::uint64_t> with_args(unsigned n, std::initializer_list<std::uint64_t> body)
{
    std::vector<std::uint64_t> c = {MOVSR(1, JAL_SR_ARGS)};
    for (unsigned i = 0; i < n; ++i) c.push_back(LD(2 + i, 1, static_cast<std::int32_t>(8 * i)));
    c.insert(c.end(), body);
    return c;
}

TEST_F(IsaOps, GatherPicksTableRowsByIndex)
{
    // Table: 10 rows of 4 F32 (row r holds r*10 + c) every 32 bytes; indices 7, 0, 9, 7.
    const std::uint64_t table = kVa + 4096, out = kVa + 16384;
    std::vector<float> t(10 * 8, -1);
    for (int r = 0; r < 10; ++r)
        for (int c = 0; c < 4; ++c) t[r * 8 + c] = static_cast<float>(r * 10 + c);
    write_vec(table, t);
    write_vec(kVa, std::vector<std::uint64_t>{table, out});
    const std::int32_t idx[4] = {7, 0, 9, 7};
    std::vector<std::uint64_t> body = {LI(10, 0),
                                       LI(11, 4),
                                       LI(12, 1),
                                       LI(13, 256),
                                       TDESC(0, 10, 11, 12, 0, JAL_DT_I32),
                                       TDESC(1, 13, 11, 11, 0, JAL_DT_F32)};
    for (int i = 0; i < 4; ++i)
        body.insert(body.end(), {LI(14, idx[i]), LI(15, i), I(JAL_OP_TWRITE, 14, 0, 15, 0, 0)});
    body.insert(body.end(), {LI(16, 32), I(JAL_OP_TGATHER, 1, 2, 16, 0, 0), TSTORE(1, 3, 0, 1),
                             WAIT(0, 1), WAIT(1, 1), END()});
    auto c = with_args(2, {});
    c.insert(c.end(), body.begin(), body.end());
    const auto r = run(c, opts());
    ASSERT_EQ(r.report.status, JAL_STATUS_OK) << r.report.fault_pc;
    const auto got = read_vec<float>(out, 16);
    for (int i = 0; i < 4; ++i)
        for (int col = 0; col < 4; ++col)
            EXPECT_EQ(got[i * 4 + col], static_cast<float>(idx[i] * 10 + col));

    // An index that lands outside every mapping is a page fault at that row's address.
    c[c.size() - 9] = LI(14, 1 << 30);  // the last index written (row 3): 2^30
    const auto f = run(c, opts());
    EXPECT_EQ(f.report.status, JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(f.report.fault_opcode, JAL_OP_TGATHER);
    EXPECT_EQ(f.report.fault_address, table + (std::uint64_t{1} << 30) * 32);
}

TEST_F(IsaOps, ConversionsFollowTheNumericsLibrary)
{
    // F32 -> BF16 -> F32 and F32 -> MXFP4 (both modes) -> F32, against jal::numerics.
    std::mt19937 rng(11);
    std::uniform_real_distribution<float> d(-8, 8);
    std::vector<float> x(2 * 64);
    for (float& v : x) v = d(rng);
    const std::uint64_t in = kVa + 4096, out = kVa + 65536;
    write_vec(in, x);
    write_vec(kVa, std::vector<std::uint64_t>{in, out});
    for (std::int32_t mode : {JAL_CVT_OCP, JAL_CVT_GGML})
        for (std::uint32_t dt : {std::uint32_t{JAL_DT_BF16}, std::uint32_t{JAL_DT_MXFP4},
                                 std::uint32_t{JAL_DT_Q8_0}}) {
            SCOPED_TRACE(dt);
            const auto r = run(
                with_args(2, {LI(10, 0), LI(11, 2), LI(12, 64), LI(13, 1024), LI(14, 2048),
                              TDESC(0, 10, 11, 12, 0, JAL_DT_F32), TDESC(1, 13, 11, 12, 0, dt),
                              TDESC(2, 14, 11, 12, 0, JAL_DT_F32), TLOAD(0, 2, 0, 0),
                              V(JAL_OP_VCVT, 1, 0, 0, 0, mode), V(JAL_OP_VCVT, 2, 1, 0, 0, mode),
                              TSTORE(2, 3, 0, 0), WAIT(0, 2), END()}),
                opts());
            ASSERT_EQ(r.report.status, JAL_STATUS_OK);
            const auto got = read_vec<float>(out, x.size());
            for (int row = 0; row < 2; ++row) {
                std::vector<std::byte> q(jal::numerics::row_bytes(static_cast<jal_dtype>(dt), 64));
                std::vector<float> back(64);
                jal::numerics::quantize_row(static_cast<jal_dtype>(dt), x.data() + row * 64,
                                            q.data(), 64, static_cast<jal_cvt_mode>(mode));
                jal::numerics::dequantize_row(static_cast<jal_dtype>(dt), q.data(), back.data(),
                                              64);
                for (int i = 0; i < 64; ++i) EXPECT_EQ(got[row * 64 + i], back[i]);
            }
        }
}

TEST_F(IsaOps, MmaWithMxfp4WeightsMatchesTheDequantizedProduct)
{
    const unsigned M = 3, N = 5, K = 64;
    std::mt19937 rng(3);
    std::uniform_real_distribution<float> d(-2, 2);
    std::vector<float> a(M * K), w(N * K);
    for (float& v : a) v = d(rng);
    for (float& v : w) v = d(rng);
    const std::size_t rb = jal::numerics::row_bytes(JAL_DT_MXFP4, K);
    std::vector<std::byte> wq(N * rb);
    for (unsigned n = 0; n < N; ++n)
        jal::numerics::quantize_row(JAL_DT_MXFP4, w.data() + n * K, wq.data() + n * rb, K);
    std::vector<float> wd(N * K);
    for (unsigned n = 0; n < N; ++n)
        jal::numerics::dequantize_row(JAL_DT_MXFP4, wq.data() + n * rb, wd.data() + n * K, K);
    const std::uint64_t va_a = kVa + 4096, va_w = kVa + 8192, out = kVa + 16384;
    write_vec(va_a, a);
    write(va_w, wq.data(), wq.size());
    write_vec(kVa, std::vector<std::uint64_t>{va_a, va_w, out});
    const auto r = run(
        with_args(3, {LI(10, 0), LI(11, 4096), LI(12, 8192), LI(13, M), LI(14, N), LI(15, K),
                      TDESC(0, 10, 13, 15, 0, JAL_DT_F32), TDESC(1, 11, 14, 15, 0, JAL_DT_MXFP4),
                      TDESC(2, 12, 13, 14, 0, JAL_DT_F32), V(JAL_OP_VFILL, 2), TLOAD(0, 2, 0, 0),
                      TLOAD(1, 3, 0, 0), MMA(2, 0, 1), TSTORE(2, 4, 0, 0), WAIT(0, 3), END()}),
        opts());
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    const auto got = read_vec<float>(out, M * N);
    for (unsigned m = 0; m < M; ++m)
        for (unsigned n = 0; n < N; ++n) {
            double ref = 0, mag = 0;
            for (unsigned k = 0; k < K; ++k) {
                ref += double(a[m * K + k]) * wd[n * K + k];
                mag += std::fabs(double(a[m * K + k]) * wd[n * K + k]);
            }
            EXPECT_NEAR(got[m * N + n], ref, mag * 1e-6);
        }
}

TEST_F(IsaOps, ElementwiseOpsAgainstPlainLoops)
{
    const std::vector<float> x = {-3.5f, -1.0f, -0.25f, 0.0f, 0.5f, 1.0f, 2.0f, 9.0f};
    const std::uint64_t in = kVa + 4096, out = kVa + 8192;
    write_vec(in, x);
    write_vec(kVa, std::vector<std::uint64_t>{in, out});
    struct Op {
        std::uint64_t insn;
        float (*ref)(float);
        double tol;
    };
    const Op ops[] = {
        {V(JAL_OP_VNEG, 1, 0), [](float v) { return -v; }, 0},
        {V(JAL_OP_VADDS, 1, 0, 0, 0, f32imm(1.5f)), [](float v) { return v + 1.5f; }, 0},
        {V(JAL_OP_VSUB, 1, 0, 0), [](float v) { return v - v; }, 0},
        {V(JAL_OP_VMAX, 1, 0, 2), [](float v) { return std::fmax(v, 0.5f); }, 0},
        {V(JAL_OP_VMIN, 1, 0, 2), [](float v) { return std::fmin(v, 0.5f); }, 0},
        {V(JAL_OP_VCLAMP, 1, 0, 20, 21),
         [](float v) { return std::fmin(std::fmax(v, -1.0f), 1.0f); }, 0},
        {V(JAL_OP_VRECIP, 1, 0), [](float v) { return 1.0f / v; }, 0},
        {V(JAL_OP_VRSQRT, 1, 0), [](float v) { return 1.0f / std::sqrt(v); }, 0},
        {V(JAL_OP_VSIGMOID, 1, 0),
         [](float v) { return static_cast<float>(1 / (1 + std::exp(-double(v)))); }, 3e-7},
        {V(JAL_OP_VSILU, 1, 0),
         [](float v) { return static_cast<float>(v / (1 + std::exp(-double(v)))); }, 3e-7},
    };
    for (const Op& op : ops) {
        SCOPED_TRACE(JAL_INSN_OPCODE(op.insn));
        // t0 = x (1 x 8), t1 = result, t2 = 0.5 (1 x 1, broadcast); x20/x21 = -1.0f / 1.0f.
        const auto r = run(
            with_args(2, {LI(10, 0), LI(11, 1), LI(12, 8), LI(13, 64), LI(14, 128),
                          TDESC(0, 10, 11, 12, 0, JAL_DT_F32), TDESC(1, 13, 11, 12, 0, JAL_DT_F32),
                          TDESC(2, 14, 11, 11, 0, JAL_DT_F32),
                          V(JAL_OP_VFILL, 2, 0, 0, 0, f32imm(0.5f)), LI(20, f32imm(-1.0f)),
                          LI(21, f32imm(1.0f)), TLOAD(0, 2, 0, 0), op.insn, TSTORE(1, 3, 0, 0),
                          WAIT(0, 2), END()}),
            opts());
        ASSERT_EQ(r.report.status, JAL_STATUS_OK);
        const auto got = read_vec<float>(out, 8);
        for (int i = 0; i < 8; ++i) {
            const float want = op.ref(x[i]);
            if (std::isnan(want))
                EXPECT_TRUE(std::isnan(got[i])) << i;
            else if (op.tol == 0)
                EXPECT_EQ(got[i], want) << i;
            else
                EXPECT_NEAR(got[i], want, std::fabs(want) * op.tol + 1e-30) << i;
        }
    }
}

TEST_F(IsaOps, TimingOnlyTouchesNoDataButChecksEverything)
{
    const std::uint64_t in = kVa + 4096, out = kVa + 8192;
    write_vec(in, std::vector<float>(8, 3.0f));
    write_vec(out, std::vector<std::uint64_t>(4, 0x5a5a5a5a5a5a5a5aull));
    write_vec(kVa, std::vector<std::uint64_t>{in, out});
    Opts o = opts();
    o.timing_only = true;
    const auto code = with_args(
        2, {LI(10, 0), LI(11, 1), LI(12, 8), TDESC(0, 10, 11, 12, 0, JAL_DT_F32), TLOAD(0, 2, 0, 0),
            V(JAL_OP_VADDS, 0, 0, 0, 0, f32imm(1.0f)), I(JAL_OP_TREAD, 5, 0, 0, 0, 0), ST(5, 3, 0),
            TSTORE(0, 3, 0, 0), MOVSR(6, JAL_SR_TIMING_ONLY), WAIT(0, 2), END()});
    const auto r = run(code, o);
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    EXPECT_EQ(r.slices[0].x[5], 0u);  // TREAD reads 0
    EXPECT_EQ(r.slices[0].x[6], 1u);
    EXPECT_EQ(read_vec<std::uint64_t>(out, 4),
              std::vector<std::uint64_t>(4, 0x5a5a5a5a5a5a5a5aull));
    // Mappings are still checked.
    write_vec(kVa, std::vector<std::uint64_t>{in, kVa + 50 * kPage});
    EXPECT_EQ(run(code, o).report.status, JAL_STATUS_PAGE_FAULT);
}

}  // namespace
