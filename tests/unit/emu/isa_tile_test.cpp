// Tiles: DMA between device memory and L1 with strides, MMA against a double-precision
// reference, the vector engine against straightforward loops, and the tile checks.
#include "isa_harness.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using namespace isatest;

namespace {

class IsaTile : public IsaTest {
protected:
    void SetUp() override { map(0, 4, 0); }
    static constexpr std::uint64_t kArgs = kVa;
    // Argument buffer: the given addresses at 0, 8, 16, ...
    void set_args(const std::vector<std::uint64_t>& a) { write_vec(kArgs, a); }
    Opts opts() const
    {
        Opts o;
        o.args = kArgs;
        return o;
    }
};

// x1 = args; x2.. = the first arguments.
std::vector<std::uint64_t> prologue(unsigned nargs)
{
    std::vector<std::uint64_t> c = {MOVSR(1, JAL_SR_ARGS)};
    for (unsigned i = 0; i < nargs; ++i)
        c.push_back(LD(2 + i, 1, static_cast<std::int32_t>(8 * i)));
    return c;
}
void append(std::vector<std::uint64_t>& c, std::initializer_list<std::uint64_t> more)
{
    c.insert(c.end(), more);
}

TEST_F(IsaTile, LoadAndStoreStridedTiles)
{
    // Source: 5 rows of 6 F32 every 40 bytes; L1 tile with a 32-byte row stride; stored back
    // packed (stride 0 = 24 bytes) elsewhere.
    const std::uint64_t src = kVa + 4096, dst = kVa + 65536;
    std::vector<float> mem(5 * 10);
    for (std::size_t i = 0; i < mem.size(); ++i) mem[i] = static_cast<float>(i) * 0.5f;
    write_vec(src, mem);
    set_args({src, dst});
    auto c = prologue(2);
    append(c, {LI(10, 64), LI(11, 5), LI(12, 6), LI(13, 40), TDESC(0, 10, 11, 12, 32, JAL_DT_F32),
               TLOAD(0, 2, 13, 0), WAIT(0, 1), TSTORE(0, 3, 0, 1), WAIT(1, 1), END()});
    const auto r = run(c, opts());
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    const auto got = read_vec<float>(dst, 30);
    for (unsigned row = 0; row < 5; ++row)
        for (unsigned col = 0; col < 6; ++col) EXPECT_EQ(got[row * 6 + col], mem[row * 10 + col]);
    EXPECT_EQ(r.report.hbm_bytes, 2u * 5 * 24 + 64 /* the scalar loads' cache line */);
}

TEST_F(IsaTile, MmaF32MatchesADoubleReference)
{
    const unsigned M = 8, N = 16, K = 64;
    const auto a = random_floats(M * K, 1), b = random_floats(N * K, 2),
               acc0 = random_floats(M * N, 3);
    const std::uint64_t va_a = kVa + 4096, va_b = va_a + 4 * M * K, va_c = va_b + 4 * N * K;
    write_vec(va_a, a);
    write_vec(va_b, b);
    write_vec(va_c, acc0);
    set_args({va_a, va_b, va_c});
    auto c = prologue(3);
    append(c, {LI(10, 0), LI(11, 8192), LI(12, 16384), LI(13, M), LI(14, N), LI(15, K),
               TDESC(0, 10, 13, 15, 0, JAL_DT_F32), TDESC(1, 11, 14, 15, 0, JAL_DT_F32),
               TDESC(2, 12, 13, 14, 0, JAL_DT_F32), TLOAD(0, 2, 0, 0), TLOAD(1, 3, 0, 0),
               TLOAD(2, 4, 0, 0), WAIT(0, 3), MMA(2, 0, 1), TSTORE(2, 4, 0, 1), WAIT(1, 1), END()});
    const auto r = run(c, opts());
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    EXPECT_EQ(r.report.flops, 2ull * M * N * K);
    const auto got = read_vec<float>(va_c, M * N);
    for (unsigned m = 0; m < M; ++m)
        for (unsigned n = 0; n < N; ++n) {
            double ref = acc0[m * N + n], mag = std::fabs(ref);
            for (unsigned k = 0; k < K; ++k) {
                ref += double(a[m * K + k]) * b[n * K + k];
                mag += std::fabs(double(a[m * K + k]) * b[n * K + k]);
            }
            EXPECT_NEAR(got[m * N + n], ref, mag * 1e-6) << m << "," << n;
        }
}

// ISA 1.4: b K-major (K rows of N) gives the bits of the weight layout holding the same
// matrix; a K-major b must be an element format and K rows of N.
TEST_F(IsaTile, MmaWithAKMajorBGivesTheWeightLayoutsBits)
{
    const unsigned M = 3, N = 32, K = 40;
    const auto a = random_floats(M * K, 4), b = random_floats(N * K, 5),
               acc0 = random_floats(M * N, 6);
    std::vector<float> b_t(b.size());
    for (unsigned n = 0; n < N; ++n)
        for (unsigned k = 0; k < K; ++k) b_t[k * N + n] = b[n * K + k];
    auto product = [&](bool kmajor, std::uint32_t b_dtype) {
        const std::uint64_t va_a = kVa + 4096, va_b = va_a + 4 * M * K, va_c = va_b + 4 * N * K;
        write_vec(va_a, a);
        write_vec(va_b, kmajor ? b_t : b);
        write_vec(va_c, acc0);
        set_args({va_a, va_b, va_c});
        auto c = prologue(3);
        append(c, {LI(10, 0), LI(11, 8192), LI(12, 16384), LI(13, M), LI(14, N), LI(15, K),
                   TDESC(0, 10, 13, 15, 0, JAL_DT_F32),
                   kmajor ? TDESC(1, 11, 15, 14, 0, b_dtype) : TDESC(1, 11, 14, 15, 0, b_dtype),
                   TDESC(2, 12, 13, 14, 0, JAL_DT_F32), TLOAD(0, 2, 0, 0), TLOAD(1, 3, 0, 0),
                   TLOAD(2, 4, 0, 0), WAIT(0, 3), MMA(2, 0, 1, kmajor ? JAL_MMA_B_KMAJOR : 0),
                   TSTORE(2, 4, 0, 1), WAIT(1, 1), END()});
        const auto r = run(c, opts());
        EXPECT_EQ(r.report.flops, r.report.status == JAL_STATUS_OK ? 2ull * M * N * K : 0u);
        if (r.report.status != JAL_STATUS_OK) {
            EXPECT_EQ(r.report.fault_opcode, JAL_OP_MMA);
        }
        return std::pair{r.report.status, read_vec<std::uint32_t>(va_c, M * N)};
    };
    const auto [st_w, weight_layout] = product(false, JAL_DT_F32);
    const auto [st_k, k_major] = product(true, JAL_DT_F32);
    ASSERT_EQ(st_w, JAL_STATUS_OK);
    ASSERT_EQ(st_k, JAL_STATUS_OK);
    EXPECT_EQ(weight_layout, k_major);
    std::vector<std::uint32_t> before(M * N);
    std::memcpy(before.data(), acc0.data(), before.size() * 4);
    EXPECT_NE(weight_layout, before);  // the MMA added something
    EXPECT_EQ(product(true, JAL_DT_MXFP8_E4M3).first, JAL_STATUS_INVALID_FIELD);  // a block format
}

TEST_F(IsaTile, MmaRejectsShapesThatDoNotFit)
{
    auto c = std::vector<std::uint64_t>{LI(10, 0),
                                        LI(11, 8192),
                                        LI(12, 16384),
                                        LI(13, 4),
                                        LI(14, 8),
                                        TDESC(0, 10, 13, 14, 0, JAL_DT_F32),
                                        TDESC(1, 11, 13, 13, 0, JAL_DT_F32),
                                        TDESC(2, 12, 13, 13, 0, JAL_DT_F32),
                                        MMA(2, 0, 1),
                                        END()};
    const auto r = run(c);
    EXPECT_EQ(r.report.status, JAL_STATUS_INVALID_FIELD);  // K 8 against K 4
    EXPECT_EQ(r.report.fault_opcode, JAL_OP_MMA);
}

TEST_F(IsaTile, VectorOpsMatchReferences)
{
    const unsigned M = 4, N = 8;
    const auto a = random_floats(M * N, 4), b = random_floats(M * N, 5), row = random_floats(N, 6),
               col = random_floats(M, 7);
    const std::uint64_t va = kVa + 4096;
    const std::uint64_t va_a = va, va_b = va + 1024, va_row = va + 2048, va_col = va + 3072,
                        out = va + 8192;
    write_vec(va_a, a);
    write_vec(va_b, b);
    write_vec(va_row, row);
    write_vec(va_col, col);
    set_args({va_a, va_b, va_row, va_col, out});
    // L1: t0 a, t1 b, t2 row (1 x N), t3 col (M x 1), t4..t11 results; each result is
    // stored to out + 256 * k.
    auto c = prologue(5);
    append(c, {LI(13, M), LI(14, N), LI(15, 1), LI(10, 0), TDESC(0, 10, 13, 14, 0, JAL_DT_F32),
               LI(10, 256), TDESC(1, 10, 13, 14, 0, JAL_DT_F32), LI(10, 512),
               TDESC(2, 10, 15, 14, 0, JAL_DT_F32), LI(10, 768),
               TDESC(3, 10, 13, 15, 0, JAL_DT_F32), TLOAD(0, 2, 0, 0), TLOAD(1, 3, 0, 0),
               TLOAD(2, 4, 0, 0), TLOAD(3, 5, 0, 0), WAIT(0, 4)});
    for (unsigned k = 0; k < 8; ++k) {
        const bool reduce = k >= 5;
        append(c, {LI(10, static_cast<std::int32_t>(1024 + 256 * k)),
                   reduce ? TDESC(4 + k, 10, 13, 15, 0, k == 7 ? JAL_DT_I32 : JAL_DT_F32)
                          : TDESC(4 + k, 10, 13, 14, 0, JAL_DT_F32)});
    }
    append(c, {V(JAL_OP_VADD, 4, 0, 2),                         // + row broadcast
               V(JAL_OP_VMUL, 5, 0, 3),                         // * column broadcast
               V(JAL_OP_VCOPY, 6, 1), V(JAL_OP_VFMA, 6, 0, 1),  // b + a*b
               V(JAL_OP_VEXP, 7, 0), V(JAL_OP_VSCALE, 8, 0, 0, 0, f32imm(0.25f)),
               V(JAL_OP_VREDSUM, 9, 0), V(JAL_OP_VREDMAX, 10, 0), V(JAL_OP_VARGMAX, 11, 0)});
    for (unsigned k = 0; k < 8; ++k)
        append(c, {ADDI(20, 6, static_cast<std::int32_t>(256 * k)), TSTORE(4 + k, 20, 0, 1)});
    append(c, {WAIT(1, 8), END()});
    const auto r = run(c, opts());
    ASSERT_EQ(r.report.status, JAL_STATUS_OK) << r.report.fault_pc;
    auto res = [&](unsigned k, unsigned n) { return read_vec<float>(out + 256 * k, n); };
    const auto add = res(0, M * N), mul = res(1, M * N), fma = res(2, M * N), ex = res(3, M * N),
               sc = res(4, M * N);
    const auto sum = res(5, M), mx = res(6, M);
    const auto am = read_vec<std::int32_t>(out + 256 * 7, M);
    for (unsigned i = 0; i < M; ++i) {
        float s = 0, m = -std::numeric_limits<float>::infinity();
        int arg = 0;
        for (unsigned j = 0; j < N; ++j) {
            const unsigned k = i * N + j;
            EXPECT_EQ(add[k], a[k] + row[j]);
            EXPECT_EQ(mul[k], a[k] * col[i]);
            EXPECT_EQ(fma[k], std::fma(a[k], b[k], b[k]));
            EXPECT_NEAR(ex[k], std::exp(double(a[k])), std::exp(double(a[k])) * 1e-6);
            EXPECT_EQ(sc[k], a[k] * 0.25f);
            s += a[k];
            if (a[k] > m) {
                m = a[k];
                arg = static_cast<int>(j);
            }
        }
        EXPECT_EQ(sum[i], s);
        EXPECT_EQ(mx[i], m);
        EXPECT_EQ(am[i], arg);
    }
}

TEST_F(IsaTile, TopKMaskIotaFillAndTileElementAccess)
{
    const std::uint64_t out = kVa + 8192;
    set_args({out});
    // t0: 2 x 6 F32 from VIOTA (0, 3, 6, ...) then TWRITE element (1, 2) = 100.0;
    // t1 = VTOPK(t0, 3) (I32), t2 = VTOPKV(t0, 3); t3 = t0 masked causally for queries
    // 1..2 against keys 0..5 with a window of 2.
    auto c = prologue(1);
    append(c, {LI(13, 2),
               LI(14, 6),
               LI(15, 3),
               LI(10, 0),
               TDESC(0, 10, 13, 14, 0, JAL_DT_F32),
               LI(10, 256),
               TDESC(1, 10, 13, 15, 0, JAL_DT_I32),
               LI(10, 512),
               TDESC(2, 10, 13, 15, 0, JAL_DT_F32),
               LI(10, 768),
               TDESC(3, 10, 13, 14, 0, JAL_DT_F32),
               LI(16, 0),
               LI(17, 3),
               V(JAL_OP_VIOTA, 0, 16, 17),
               LI(18, f32imm(100.0f)),
               LI(19, 1),
               I(JAL_OP_TWRITE, 18, 0, 19, 0, 2),
               I(JAL_OP_TREAD, 21, 0, 19, 0, 5),  // element (1, 5) = 15.0
               V(JAL_OP_VTOPK, 1, 0, 0, 0, 3),
               V(JAL_OP_VTOPKV, 2, 0, 0, 0, 3),
               V(JAL_OP_VCOPY, 3, 0),
               LI(22, 1),
               LI(23, 0),
               V(JAL_OP_VMASK, 3, 22, 23, 0, 2),
               TSTORE(0, 2, 0, 0),
               ADDI(2, 2, 256),
               TSTORE(1, 2, 0, 0),
               ADDI(2, 2, 256),
               TSTORE(2, 2, 0, 0),
               ADDI(2, 2, 256),
               TSTORE(3, 2, 0, 0),
               WAIT(0, 4),
               END()});
    const auto r = run(c, opts());
    ASSERT_EQ(r.report.status, JAL_STATUS_OK) << r.report.fault_pc;
    const auto t0 = read_vec<float>(out, 12);
    EXPECT_EQ(t0, (std::vector<float>{0, 3, 6, 9, 12, 15, 0, 3, 100, 9, 12, 15}));
    float f15;
    const std::uint32_t bits = static_cast<std::uint32_t>(r.slices[0].x[21]);
    std::memcpy(&f15, &bits, 4);
    EXPECT_EQ(f15, 15.0f);
    EXPECT_EQ(read_vec<std::int32_t>(out + 256, 6), (std::vector<std::int32_t>{5, 4, 3, 2, 5, 4}));
    EXPECT_EQ(read_vec<float>(out + 512, 6), (std::vector<float>{15, 12, 9, 100, 15, 12}));
    const float ninf = -std::numeric_limits<float>::infinity();
    // Query 1 sees keys 0..1 (window 2: 1-0 < 2); query 2 sees keys 1..2.
    EXPECT_EQ(read_vec<float>(out + 768, 12),
              (std::vector<float>{0, 3, ninf, ninf, ninf, ninf, ninf, 3, 100, ninf, ninf, ninf}));
}

// VIOTA fills every row with the same sequence, x[b] + c * x[c] for column c, wrapped to 32
// bits for I32 (a negative step is a large unsigned one).
TEST_F(IsaTile, IotaRepeatsItsSequenceInEveryRow)
{
    const std::uint64_t out = kVa + 8192;
    set_args({out});
    auto c = prologue(1);
    append(c, {LI(13, 3), LI(14, 2), LI(10, 0), TDESC(0, 10, 13, 14, 0, JAL_DT_I32), LI(16, 5),
               LI(17, -2), V(JAL_OP_VIOTA, 0, 16, 17), TSTORE(0, 2, 0, 0), WAIT(0, 1), END()});
    const auto r = run(c, opts());
    ASSERT_EQ(r.report.status, JAL_STATUS_OK) << r.report.fault_pc;
    EXPECT_EQ(read_vec<std::int32_t>(out, 6), (std::vector<std::int32_t>{5, 3, 5, 3, 5, 3}));
}

TEST_F(IsaTile, TilesMustLieInsideL1AndTheCodeObjectsL1Bytes)
{
    const std::vector<std::uint64_t> c = {
        LI(10, static_cast<std::int32_t>(JAL_SLICE_L1_BYTES - 100)), LI(11, 2), LI(12, 16),
        TDESC(0, 10, 11, 12, 0, JAL_DT_F32), END()};
    const auto r = run(c);
    EXPECT_EQ(r.report.status, JAL_STATUS_OUT_OF_RANGE);
    EXPECT_EQ(r.report.fault_pc, 3u);
    EXPECT_EQ(r.report.fault_address, JAL_SLICE_L1_BYTES - 100 + 2 * 64);  // the tile's end
    // The same tile fits when it starts lower, unless the code object asks for less L1.
    const std::vector<std::uint64_t> fits = {LI(10, 65536), LI(11, 2), LI(12, 16),
                                             TDESC(0, 10, 11, 12, 0, JAL_DT_F32), END()};
    EXPECT_EQ(run(fits).report.status, JAL_STATUS_OK);
    Opts o;
    o.l1_bytes = 65536;
    EXPECT_EQ(run(fits, o).report.status, JAL_STATUS_OUT_OF_RANGE);
    // MX tiles need whole blocks of 32 columns; a stride shorter than a row is invalid.
    EXPECT_EQ(
        run({LI(11, 2), LI(12, 48), TDESC(0, 0, 11, 12, 0, JAL_DT_MXFP4), END()}).report.status,
        JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(
        run({LI(11, 2), LI(12, 16), TDESC(0, 0, 11, 12, 32, JAL_DT_F32), END()}).report.status,
        JAL_STATUS_INVALID_FIELD);
    // An undescribed tile register cannot be used.
    EXPECT_EQ(run({V(JAL_OP_VNEG, 3, 4), END()}).report.status, JAL_STATUS_INVALID_FIELD);
    // TREAD outside the tile.
    EXPECT_EQ(run({LI(11, 2), LI(12, 16), TDESC(0, 0, 11, 12, 0, JAL_DT_F32),
                   I(JAL_OP_TREAD, 1, 0, 11, 0, 0), END()})
                  .report.status,
              JAL_STATUS_OUT_OF_RANGE);
}

// Packed rows (back to back in memory and in L1) move as one run; rows with a wider L1
// stride move one by one. Across a page boundary between two slices' HBM, with the second
// page poisoned or not, both give the same bytes, bytes moved, energy and fault address.
TEST_F(IsaTile, PackedRowsAcrossPagesMoveAsRowByRow)
{
    map(4, 1, 1);  // page 4 in slice 1's HBM: not contiguous with page 3's
    const std::uint64_t src = kVa + 4 * kPage - 3 * 24 - 8, dst = kVa + 4096;
    const std::vector<float> rows = random_floats(6 * 6, 7);  // 6 rows of 6 F32, packed
    write_vec(src, rows);
    set_args({src, dst});
    auto load_store = [&](std::uint32_t l1_stride) {
        auto c = prologue(2);
        append(c, {LI(10, 64), LI(11, 6), LI(12, 6), TDESC(0, 10, 11, 12, l1_stride, JAL_DT_F32),
                   TLOAD(0, 2, 0, 0), WAIT(0, 1), TSTORE(0, 3, 0, 1), WAIT(1, 1), END()});
        return run(c, opts());
    };
    const auto packed = load_store(0), by_rows = load_store(32);
    ASSERT_EQ(packed.report.status, JAL_STATUS_OK);
    ASSERT_EQ(by_rows.report.status, JAL_STATUS_OK);
    EXPECT_EQ(read_vec<float>(dst, rows.size()), rows);
    EXPECT_EQ(packed.report.hbm_bytes, by_rows.report.hbm_bytes);
    EXPECT_EQ(packed.report.energy_nj, by_rows.report.energy_nj);

    hbm_.poison(JAL_HBM_SLICE_BYTES);  // page 4's physical page
    const auto packed_bad = load_store(0), by_rows_bad = load_store(32);
    EXPECT_EQ(packed_bad.report.status, JAL_STATUS_ECC_UNCORRECTED);
    EXPECT_EQ(by_rows_bad.report.status, JAL_STATUS_ECC_UNCORRECTED);
    EXPECT_EQ(packed_bad.report.fault_address, kVa + 4 * kPage);
    EXPECT_EQ(by_rows_bad.report.fault_address, kVa + 4 * kPage);
}

// A gather of consecutive rows of a packed table into packed L1 rows moves them as one run;
// into rows with a wider L1 stride, one by one. Across the same two slices' pages as above,
// both give the same bytes, bytes moved, energy and (second page poisoned) fault address,
// for indices in one run and in two.
TEST_F(IsaTile, GatheredRunsMoveAsRowByRow)
{
    map(4, 1, 1);
    const std::uint64_t table = kVa + 4 * kPage - 3 * 24 - 8, dst = kVa + 4096;
    const std::vector<float> rows = random_floats(6 * 6, 8);  // 6 rows of 6 F32, packed
    write_vec(table, rows);
    set_args({table, dst});
    auto gather = [&](std::uint32_t l1_stride, const std::vector<std::int32_t>& idx) {
        auto c = prologue(2);
        append(c, {LI(10, 0), LI(11, 6), LI(12, 1), TDESC(0, 10, 11, 12, 0, JAL_DT_I32),
                   LI(10, 256), LI(12, 6), TDESC(1, 10, 11, 12, l1_stride, JAL_DT_F32)});
        for (std::int32_t r = 0; r < 6; ++r)
            append(c, {LI(14, idx[static_cast<std::size_t>(r)]), LI(15, r),
                       I(JAL_OP_TWRITE, 14, 0, 15, 0, 0)});
        append(c, {LI(16, 24), I(JAL_OP_TGATHER, 1, 2, 16, 0, 0), WAIT(0, 1), TSTORE(1, 3, 0, 1),
                   WAIT(1, 1), END()});
        return run(c, opts());
    };
    const std::vector<std::int32_t> one_run = {0, 1, 2, 3, 4, 5}, two_runs = {4, 5, 0, 1, 2, 3};
    for (const auto& idx : {one_run, two_runs}) {
        const auto packed = gather(0, idx), by_rows = gather(32, idx);
        ASSERT_EQ(packed.report.status, JAL_STATUS_OK);
        ASSERT_EQ(by_rows.report.status, JAL_STATUS_OK);
        std::vector<float> want;
        for (std::int32_t r : idx)
            want.insert(want.end(), rows.begin() + r * 6, rows.begin() + r * 6 + 6);
        EXPECT_EQ(read_vec<float>(dst, want.size()), want);
        EXPECT_EQ(packed.report.hbm_bytes, by_rows.report.hbm_bytes);
        EXPECT_EQ(packed.report.energy_nj, by_rows.report.energy_nj);
        EXPECT_EQ(packed.report.modelled_ns, by_rows.report.modelled_ns);
    }

    hbm_.poison(JAL_HBM_SLICE_BYTES);  // page 4's physical page
    // One run: row 3 crosses into page 4, so the first lost byte is the page's first.
    // Two runs: row 4, wholly in page 4, comes first.
    const std::uint64_t first_lost[2] = {kVa + 4 * kPage, table + 4 * 24};
    int k = 0;
    for (const auto& idx : {one_run, two_runs}) {
        const auto packed = gather(0, idx), by_rows = gather(32, idx);
        EXPECT_EQ(packed.report.status, JAL_STATUS_ECC_UNCORRECTED);
        EXPECT_EQ(by_rows.report.status, JAL_STATUS_ECC_UNCORRECTED);
        EXPECT_EQ(packed.report.fault_address, first_lost[k]);
        EXPECT_EQ(by_rows.report.fault_address, first_lost[k]);
        ++k;
    }
}

TEST_F(IsaTile, TileLoadFromUnmappedMemoryIsAPageFault)
{
    const std::uint64_t bad = kVa + 100 * kPage;
    set_args({bad});
    auto c = prologue(1);
    append(c,
           {LI(11, 2), LI(12, 16), TDESC(0, 0, 11, 12, 0, JAL_DT_F32), TLOAD(0, 2, 0, 0), END()});
    const auto r = run(c, opts());
    EXPECT_EQ(r.report.status, JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(r.report.fault_address, bad);
    EXPECT_EQ(r.report.fault_opcode, JAL_OP_TLOAD);
}

}  // namespace
