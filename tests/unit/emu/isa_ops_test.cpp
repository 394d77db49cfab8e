// The remaining tile operations: gathers, conversions, MMA with block-format weights, the
// elementwise ops not covered elsewhere, and timing-only mode's promise to touch no data.
#include "isa_harness.hpp"

#include <jal/isa/numerics.hpp>
#include <jal/isa/tile_math.hpp>

#include <cmath>
#include <cstring>
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

// The vector engine works on L1 where it lies when it can (executor's fast path) and on
// copies otherwise; either way an op reads its operands as they were before it writes:
// the result's L1 bytes after each op, against a model that copies every operand out
// first. Layouts: the result as an input, apart from it, partly over it, a broadcast row
// inside it, strided rows, contiguous rows and rows at an address no float is aligned to.
struct TileAt {
    std::uint32_t addr, rows, cols, stride;
};

class VectorOverlap : public IsaOps {
protected:
    static constexpr std::uint32_t kBytes = 1024;

    // Runs `op` (V(op, 1, 2, 3, ...) over tiles d, a, b) on L1 holding `img`; L1 after.
    std::vector<std::byte> run_op(const std::vector<std::byte>& img, std::uint8_t op, TileAt d,
                                  TileAt a, TileAt b, std::uint32_t dt, std::int32_t imm)
    {
        const std::uint64_t in = kVa + 4096, out = kVa + 8192;
        write(in, img.data(), img.size());
        write_vec(kVa, std::vector<std::uint64_t>{in, out});
        std::vector<std::uint64_t> code =
            with_args(2, {LI(10, 0), LI(11, 1), LI(12, kBytes / 4),
                          TDESC(0, 10, 11, 12, 0, JAL_DT_F32), TLOAD(0, 2, 0, 0),
                          LI(20, f32imm(-0.75f)), LI(21, f32imm(1.25f)), LI(22, 3), LI(23, 2)});
        const TileAt ts[] = {d, a, b};
        for (unsigned t = 0; t < 3; ++t) {
            code.insert(code.end(), {LI(13, ts[t].addr), LI(14, ts[t].rows), LI(15, ts[t].cols),
                                     TDESC(1 + t, 13, 14, 15, ts[t].stride,
                                           t == 0 ? dt : std::uint32_t{JAL_DT_F32})});
        }
        switch (op) {
        case JAL_OP_VFILL:
            code.push_back(V(op, 1, 0, 0, 0, imm));
            break;
        case JAL_OP_VMASK:  // query x22 = 3, first key x23 = 2, window imm
        case JAL_OP_VIOTA:  // from x22 = 3 in steps of x23 = 2
            code.push_back(V(op, 1, 22, 23, 0, imm));
            break;
        case JAL_OP_VCLAMP:  // to [x20, x21]
            code.push_back(V(op, 1, 2, 20, 21));
            break;
        default:  // t1 = op(t2[, t3])
            code.push_back(V(op, 1, 2, op >= JAL_OP_VADD && op <= JAL_OP_VFMA ? 3 : 0, 0, imm));
            break;
        }
        code.insert(code.end(), {TSTORE(0, 3, 0, 0), WAIT(0, 2), END()});
        const auto r = run(code, opts());
        EXPECT_EQ(r.report.status, JAL_STATUS_OK) << r.report.fault_pc;
        std::vector<std::byte> got(kBytes);
        const auto words = read_vec<std::uint8_t>(out, kBytes);
        std::memcpy(got.data(), words.data(), kBytes);
        return got;
    }
};

float at(const std::vector<std::byte>& m, TileAt t, std::uint32_t r, std::uint32_t c)
{
    float v;
    std::memcpy(&v, m.data() + t.addr + r * t.stride + 4 * c, 4);
    return v;
}
void put(std::vector<std::byte>& m, TileAt t, std::uint32_t r, std::uint32_t c, float v)
{
    std::memcpy(m.data() + t.addr + r * t.stride + 4 * c, &v, 4);
}

float one(std::uint8_t op, float x, float y, float z)
{
    float v = x;
    switch (op) {
    case JAL_OP_VADD:
        return x + y;
    case JAL_OP_VSUB:
        return x - y;
    case JAL_OP_VMUL:
        return x * y;
    case JAL_OP_VMAX:
        return std::fmax(x, y);
    case JAL_OP_VMIN:
        return std::fmin(x, y);
    case JAL_OP_VFMA:
        return std::fma(x, y, z);
    case JAL_OP_VSCALE:
        return x * 0.5f;
    case JAL_OP_VNEG:
        return -x;
    case JAL_OP_VCLAMP:
        return std::fmin(std::fmax(x, -0.75f), 1.25f);
    case JAL_OP_VEXP:
        jal::numerics::exp_f32(&x, &v, 1);
        return v;
    default:
        jal::numerics::silu_f32(&x, &v, 1);
        return v;  // VSILU
    }
}

// The model: every input element read from `m` as it was, then d written.
std::vector<std::byte> model(std::vector<std::byte> m, std::uint8_t op, TileAt d, TileAt a,
                             TileAt b)
{
    const std::vector<std::byte> before = m;
    if (op == JAL_OP_VREDSUM || op == JAL_OP_VREDMAX) {
        for (std::uint32_t r = 0; r < a.rows; ++r) {
            float acc = op == JAL_OP_VREDSUM ? 0.0f : at(before, a, r, 0);
            for (std::uint32_t c = op == JAL_OP_VREDSUM ? 0 : 1; c < a.cols; ++c)
                acc = op == JAL_OP_VREDSUM ? acc + at(before, a, r, c)
                                           : std::fmax(acc, at(before, a, r, c));
            put(m, d, r, 0, acc);
        }
        return m;
    }
    for (std::uint32_t r = 0; r < d.rows; ++r)
        for (std::uint32_t c = 0; c < d.cols; ++c) {
            const float y = at(before, b, b.rows == 1 ? 0 : r, b.cols == 1 ? 0 : c);
            put(m, d, r, c,
                op == JAL_OP_VCOPY ? at(before, a, r, c)
                                   : one(op, at(before, a, r, c), y, at(before, d, r, c)));
        }
    return m;
}

TEST_F(VectorOverlap, OperandsAreReadAsTheyWereWhateverTheLayout)
{
    std::vector<std::byte> img(kBytes);
    const std::vector<float> x = random_floats(kBytes / 4, 5);
    std::memcpy(img.data(), x.data(), kBytes);
    // Sane floats at 770 (two bytes past a float boundary) for the unaligned layouts.
    const std::vector<float> u = random_floats(60, 6);
    std::memcpy(img.data() + 770, u.data(), u.size() * 4);

    const TileAt strided{0, 2, 8, 48}, apart{256, 2, 8, 48}, shifted{4, 2, 8, 48},
        other{512, 2, 8, 32}, packed{0, 2, 8, 32}, odd{770, 2, 8, 40}, row_in_d{48, 1, 8, 32},
        column{600, 2, 1, 4};
    struct Case {
        TileAt d, a, b;
    };
    const Case binary_cases[] = {
        {strided, strided, other},   // the result is a
        {apart, strided, other},     // apart
        {shifted, strided, other},   // partly over a
        {strided, other, row_in_d},  // a broadcast row inside the result
        {strided, strided, column},  // a broadcast column
        {strided, other, strided},   // the result is b
        {odd, odd, other},           // no float alignment
        {packed, packed, other},
    };
    for (std::uint8_t op :
         {JAL_OP_VADD, JAL_OP_VSUB, JAL_OP_VMUL, JAL_OP_VMAX, JAL_OP_VMIN, JAL_OP_VFMA})
        for (const Case& k : binary_cases) {
            SCOPED_TRACE(testing::Message() << "op " << int(op) << " d@" << k.d.addr << " a@"
                                            << k.a.addr << " b@" << k.b.addr);
            EXPECT_EQ(run_op(img, op, k.d, k.a, k.b, JAL_DT_F32, 0), model(img, op, k.d, k.a, k.b));
        }
    const Case unary_cases[] = {{strided, strided, other}, {apart, strided, other},
                                {shifted, strided, other}, {packed, packed, other},
                                {apart, packed, other},    {odd, odd, other}};
    for (std::uint8_t op :
         {JAL_OP_VSCALE, JAL_OP_VNEG, JAL_OP_VCLAMP, JAL_OP_VEXP, JAL_OP_VSILU, JAL_OP_VCOPY})
        for (const Case& k : unary_cases) {
            SCOPED_TRACE(testing::Message()
                         << "op " << int(op) << " d@" << k.d.addr << " a@" << k.a.addr);
            EXPECT_EQ(
                run_op(img, op, k.d, k.a, k.b, JAL_DT_F32, op == JAL_OP_VSCALE ? f32imm(0.5f) : 0),
                model(img, op, k.d, k.a, k.b));
        }
    const Case reduce_cases[] = {{{0, 2, 1, 48}, strided, other},  // over a's first column
                                 {{4, 2, 1, 48}, strided, other},  // over its second
                                 {{800, 2, 1, 4}, strided, other},
                                 {{512, 2, 1, 4}, odd, other}};
    for (std::uint8_t op : {JAL_OP_VREDSUM, JAL_OP_VREDMAX})
        for (const Case& k : reduce_cases) {
            SCOPED_TRACE(testing::Message()
                         << "op " << int(op) << " d@" << k.d.addr << " a@" << k.a.addr);
            EXPECT_EQ(run_op(img, op, k.d, k.a, k.b, JAL_DT_F32, 0), model(img, op, k.d, k.a, k.b));
        }
}

TEST_F(VectorOverlap, FillsMasksAndIotasWriteOnlyTheirRows)
{
    std::vector<std::byte> img(kBytes);
    const std::vector<float> x = random_floats(kBytes / 4, 7);
    std::memcpy(img.data(), x.data(), kBytes);
    const TileAt other{512, 2, 8, 32};
    for (const TileAt d : {TileAt{0, 2, 8, 48}, TileAt{770, 2, 8, 40}}) {
        SCOPED_TRACE(d.addr);
        // VFILL: every element the immediate's bits.
        std::vector<std::byte> want = img;
        for (std::uint32_t r = 0; r < d.rows; ++r)
            for (std::uint32_t c = 0; c < d.cols; ++c) put(want, d, r, c, 2.5f);
        EXPECT_EQ(run_op(img, JAL_OP_VFILL, d, other, other, JAL_DT_F32, f32imm(2.5f)), want);
        // VMASK (query 3 at row 0, keys from 2 at column 0, window 4): -inf where the key is
        // after the query or 4 or more before it.
        want = img;
        for (std::uint32_t r = 0; r < d.rows; ++r)
            for (std::uint32_t c = 0; c < d.cols; ++c) {
                const int q = 3 + int(r), key = 2 + int(c);
                if (key > q || q - key >= 4) put(want, d, r, c, -INFINITY);
            }
        EXPECT_EQ(run_op(img, JAL_OP_VMASK, d, other, other, JAL_DT_F32, 4), want);
        // VIOTA (from 3, step 2) in F32 and I32.
        want = img;
        for (std::uint32_t r = 0; r < d.rows; ++r)
            for (std::uint32_t c = 0; c < d.cols; ++c) put(want, d, r, c, float(3 + 2 * c));
        EXPECT_EQ(run_op(img, JAL_OP_VIOTA, d, other, other, JAL_DT_F32, 0), want);
        want = img;
        for (std::uint32_t r = 0; r < d.rows; ++r)
            for (std::uint32_t c = 0; c < d.cols; ++c) {
                const std::int32_t v = 3 + 2 * std::int32_t(c);
                std::memcpy(want.data() + d.addr + r * d.stride + 4 * c, &v, 4);
            }
        EXPECT_EQ(run_op(img, JAL_OP_VIOTA, d, other, other, JAL_DT_I32, 0), want);
    }
}

}  // namespace
