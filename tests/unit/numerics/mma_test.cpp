// MMA for every dtype combination: bit-exact against a plain loop written here from the
// semantics in docs/numerics.md (decoding with reference_decode.hpp), within a documented
// bound of a double-precision product, and identical in the scalar and AVX2 paths.
#include <jal/isa/tile_math.hpp>

#include "reference_decode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace jal::numerics;
using namespace numerics_test;

namespace {

struct Matrix {
    jal_dtype dtype;
    uint32_t rows, cols, stride;
    std::vector<uint8_t> bytes;
    ConstTile tile() const { return {bytes.data(), rows, cols, stride, dtype}; }
};

// Random finite data of any matrix dtype; stride has 12 bytes of padding after each row.
Matrix random_matrix(jal_dtype dt, uint32_t rows, uint32_t cols, std::mt19937& rng)
{
    Matrix m{dt, rows, cols, uint32_t(row_bytes(dt, cols) + 12), {}};
    m.bytes.assign(size_t(m.stride) * rows, 0xa5);
    std::uniform_real_distribution<float> val(-4.0f, 4.0f);
    std::uniform_int_distribution<int> scale(118, 134), q8(-127, 127);
    for (uint32_t r = 0; r < rows; r++) {
        uint8_t* p = m.bytes.data() + size_t(r) * m.stride;
        for (uint32_t k = 0; k < cols; k++) {
            size_t b = k / 32, j = k % 32;
            switch (dt) {
            case JAL_DT_F32: {
                float f = val(rng);
                std::memcpy(p + 4 * k, &f, 4);
                break;
            }
            case JAL_DT_BF16:
            case JAL_DT_F16: {
                uint16_t h = dt == JAL_DT_BF16 ? f32_to_bf16(val(rng)) : f32_to_f16(val(rng));
                std::memcpy(p + 2 * k, &h, 2);
                break;
            }
            case JAL_DT_MXFP8_E4M3:
            case JAL_DT_MXFP8_E5M2: {
                uint8_t* blk = p + b * 33;
                if (j == 0) blk[0] = uint8_t(scale(rng));
                uint8_t c;
                do c = uint8_t(rng());
                while (dt == JAL_DT_MXFP8_E4M3 ? (c & 0x7f) == 0x7f : ((c >> 2) & 0x1f) == 31);
                blk[1 + j] = c;
                break;
            }
            case JAL_DT_MXFP4: {
                uint8_t* blk = p + b * 17;
                if (j == 0) blk[0] = uint8_t(scale(rng));
                uint8_t c = uint8_t(rng() & 0xf);
                if (j < 16)
                    blk[1 + j] = c;
                else
                    blk[1 + j - 16] = uint8_t((blk[1 + j - 16] & 0x0f) | (c << 4));
                break;
            }
            case JAL_DT_Q8_0: {
                uint8_t* blk = p + b * 34;
                if (j == 0) {
                    uint16_t d = f32_to_f16(
                        std::ldexp(1.0f + float(rng() % 1000) / 1000.0f, -int(rng() % 8) - 3));
                    std::memcpy(blk, &d, 2);
                }
                blk[2 + j] = uint8_t(int8_t(q8(rng)));
                break;
            }
            default:
                break;
            }
        }
    }
    return m;
}

std::vector<float> random_acc(uint32_t M, uint32_t N, std::mt19937& rng)
{
    std::uniform_real_distribution<float> val(-8.0f, 8.0f);
    std::vector<float> acc(size_t(M) * N);
    for (auto& v : acc) v = val(rng);
    return acc;
}

std::vector<double> decode(const Matrix& m, uint32_t r)
{
    auto v = ref_decode_row(m.dtype, m.bytes.data() + size_t(r) * m.stride, m.cols);
    if (m.dtype == JAL_DT_MXFP4)
        for (double& x : v) x += 0.0;  // E2M1 -0 decodes to +0 (docs/numerics.md)
    return v;
}

// The semantics, written plainly.
std::vector<float> reference_loop(const std::vector<float>& acc0, const Matrix& a, const Matrix& b)
{
    const uint32_t M = a.rows, N = b.rows, K = a.cols;
    std::vector<float> acc = acc0;
    if (a.dtype == JAL_DT_Q8_0 && (b.dtype == JAL_DT_MXFP4 || b.dtype == JAL_DT_Q8_0)) {
        static const int kv[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t n = 0; n < N; n++) {
                float s = acc[size_t(m) * N + n];
                for (uint32_t j = 0; j < K / 32; j++) {
                    const uint8_t* ab = a.bytes.data() + size_t(m) * a.stride + j * 34;
                    uint16_t ad;
                    std::memcpy(&ad, ab, 2);
                    int isum = 0;
                    float d;
                    if (b.dtype == JAL_DT_MXFP4) {
                        const uint8_t* bb = b.bytes.data() + size_t(n) * b.stride + j * 17;
                        for (int i = 0; i < 32; i++) {
                            uint8_t code = i < 16 ? bb[1 + i] & 0xf : bb[1 + i - 16] >> 4;
                            isum += int8_t(ab[2 + i]) * kv[code];
                        }
                        d = float(ref_e8m0(bb[0]) / 2) * float(ref_f16(ad));
                    } else {
                        const uint8_t* bb = b.bytes.data() + size_t(n) * b.stride + j * 34;
                        uint16_t bd;
                        std::memcpy(&bd, bb, 2);
                        for (int i = 0; i < 32; i++) isum += int8_t(ab[2 + i]) * int8_t(bb[2 + i]);
                        d = float(ref_f16(bd)) * float(ref_f16(ad));
                    }
                    float t = d * float(isum);
                    s = s + t;
                }
                acc[size_t(m) * N + n] = s;
            }
        return acc;
    }
    std::vector<std::vector<double>> bd(N);
    for (uint32_t n = 0; n < N; n++) bd[n] = decode(b, n);
    for (uint32_t m = 0; m < M; m++) {
        auto ad = decode(a, m);
        for (uint32_t n = 0; n < N; n++) {
            float s = acc[size_t(m) * N + n];
            for (uint32_t k = 0; k < K; k++) s = std::fma(float(ad[k]), float(bd[n][k]), s);
            acc[size_t(m) * N + n] = s;
        }
    }
    return acc;
}

// mma on path `isa` (kmajor: mma_kmajor, b holding K rows of N).
std::vector<float> run_mma(Isa isa, const std::vector<float>& acc0, const Matrix& a,
                           const Matrix& b, bool kmajor = false)
{
    const uint32_t M = a.rows, N = kmajor ? b.cols : b.rows;
    // acc with a padded row stride, to check that the padding is left alone
    const uint32_t stride = N * 4 + 20;
    std::vector<uint8_t> buf(size_t(stride) * M, 0x5a);
    for (uint32_t m = 0; m < M; m++)
        std::memcpy(buf.data() + size_t(m) * stride, acc0.data() + size_t(m) * N, size_t(N) * 4);
    force_isa(isa);
    std::string err;
    const Tile acc{buf.data(), M, N, stride, JAL_DT_F32};
    jal_status st =
        kmajor ? mma_kmajor(acc, a.tile(), b.tile(), &err) : mma(acc, a.tile(), b.tile(), &err);
    force_isa(best_isa());
    EXPECT_EQ(JAL_STATUS_OK, st) << err;
    std::vector<float> out(size_t(M) * N);
    for (uint32_t m = 0; m < M; m++) {
        std::memcpy(out.data() + size_t(m) * N, buf.data() + size_t(m) * stride, size_t(N) * 4);
        for (uint32_t i = N * 4; i < stride; i++)
            EXPECT_EQ(0x5a, buf[size_t(m) * stride + i]) << "row padding overwritten";
    }
    return out;
}

void expect_bits_equal(const std::vector<float>& want, const std::vector<float>& got,
                       const std::string& what)
{
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); i++)
        if (bits_of(want[i]) != bits_of(got[i])) {
            ADD_FAILURE() << what << ": element " << i << " want " << want[i] << " got " << got[i];
            return;
        }
}

// |got - exact| <= (K + 2) * 2^-24 * (|acc0| + sum |a b|): every rounding of the
// sequential fma chain (or of the per-block scale, product and sum) is at most half an ulp
// of a partial sum bounded by that total.
void expect_near_exact(const std::vector<float>& acc0, const Matrix& a, const Matrix& b,
                       const std::vector<float>& got, const std::string& what)
{
    const uint32_t M = a.rows, N = b.rows, K = a.cols;
    std::vector<std::vector<double>> bd(N);
    for (uint32_t n = 0; n < N; n++) bd[n] = decode(b, n);
    for (uint32_t m = 0; m < M; m++) {
        auto ad = decode(a, m);
        for (uint32_t n = 0; n < N; n++) {
            double exact = acc0[size_t(m) * N + n], mag = std::fabs(exact);
            for (uint32_t k = 0; k < K; k++) {
                exact += ad[k] * bd[n][k];
                mag += std::fabs(ad[k] * bd[n][k]);
            }
            double tol = (K + 2) * 0x1p-24 * mag;
            if (std::fabs(got[size_t(m) * N + n] - exact) > tol) {
                ADD_FAILURE() << what << ": (" << m << "," << n << ") got "
                              << got[size_t(m) * N + n] << " exact " << exact << " tolerance "
                              << tol;
                return;
            }
        }
    }
}

std::string name(jal_dtype dt)
{
    switch (dt) {
    case JAL_DT_F32:
        return "F32";
    case JAL_DT_BF16:
        return "BF16";
    case JAL_DT_F16:
        return "F16";
    case JAL_DT_MXFP8_E4M3:
        return "MXFP8_E4M3";
    case JAL_DT_MXFP8_E5M2:
        return "MXFP8_E5M2";
    case JAL_DT_MXFP4:
        return "MXFP4";
    case JAL_DT_Q8_0:
        return "Q8_0";
    default:
        return "?";
    }
}

void check_combination(jal_dtype adt, jal_dtype bdt, uint32_t M, uint32_t N, uint32_t K,
                       uint32_t seed)
{
    std::mt19937 rng(seed);
    Matrix a = random_matrix(adt, M, K, rng), b = random_matrix(bdt, N, K, rng);
    auto acc0 = random_acc(M, N, rng);
    std::string what = name(adt) + " x " + name(bdt) + " M=" + std::to_string(M) +
                       " N=" + std::to_string(N) + " K=" + std::to_string(K);
    auto want = reference_loop(acc0, a, b);
    auto scalar = run_mma(Isa::scalar, acc0, a, b);
    expect_bits_equal(want, scalar, what + " (scalar vs the semantics)");
    expect_near_exact(acc0, a, b, scalar, what);
    if (host_has_avx2()) {
        auto avx2 = run_mma(Isa::avx2, acc0, a, b);
        expect_bits_equal(scalar, avx2, what + " (avx2 vs scalar)");
    }
    if (host_has_avx512()) {
        auto avx512 = run_mma(Isa::avx512, acc0, a, b);
        expect_bits_equal(scalar, avx512, what + " (avx512 vs scalar)");
    }
}

const jal_dtype kA[] = {JAL_DT_F32,        JAL_DT_BF16,  JAL_DT_F16, JAL_DT_MXFP8_E4M3,
                        JAL_DT_MXFP8_E5M2, JAL_DT_MXFP4, JAL_DT_Q8_0};
const jal_dtype kB[] = {JAL_DT_F32,        JAL_DT_BF16,       JAL_DT_F16,
                        JAL_DT_MXFP8_E4M3, JAL_DT_MXFP8_E5M2, JAL_DT_MXFP4};

}  // namespace

TEST(NumericsMma, EveryDtypeCombinationSmallShapes)
{
    const uint32_t shapes[][3] = {{1, 1, 32}, {3, 5, 64}, {7, 70, 96}, {13, 9, 320}};
    uint32_t seed = 1;
    for (jal_dtype a : kA)
        for (jal_dtype b : kB)
            for (auto& s : shapes) check_combination(a, b, s[0], s[1], s[2], seed++);
    for (auto& s : shapes) check_combination(JAL_DT_Q8_0, JAL_DT_Q8_0, s[0], s[1], s[2], seed++);
}

TEST(NumericsMma, PanelAndBlockEdges)
{
    // K across several 256-wide panels with a remainder, N across 64-wide panels with a
    // remainder, M across the 6-row blocks with every remainder
    for (uint32_t M : {1u, 2u, 3u, 4u, 5u, 6u, 8u, 11u})
        check_combination(JAL_DT_F32, JAL_DT_MXFP4, M, 131, 576, 100 + M);
    check_combination(JAL_DT_BF16, JAL_DT_F16, 6, 65, 544, 200);
    check_combination(JAL_DT_Q8_0, JAL_DT_MXFP4, 5, 131, 576, 201);
    check_combination(JAL_DT_Q8_0, JAL_DT_Q8_0, 3, 17, 576, 202);
    check_combination(JAL_DT_MXFP8_E4M3, JAL_DT_MXFP8_E5M2, 7, 66, 288, 203);
}

// A chunk of cached keys times a query (the attention's scores at decode): many rows of an
// F32 a, one to four rows of b; every remainder of the sixteen-row blocks, K blocked or not.
TEST(NumericsMma, TallAFewColumns)
{
    uint32_t seed = 600;
    for (uint32_t M : {16u, 17u, 31u, 64u, 70u})
        for (uint32_t N : {1u, 2u, 3u, 4u})
            for (jal_dtype b : {JAL_DT_F32, JAL_DT_BF16, JAL_DT_MXFP4}) {
                check_combination(JAL_DT_F32, b, M, N, 64, seed++);
                if (b != JAL_DT_MXFP4) check_combination(JAL_DT_F32, b, M, N, 7, seed++);
            }
    check_combination(JAL_DT_F32, JAL_DT_F16, 130, 5, 64, seed++);  // five columns: not this path
}

TEST(NumericsMma, DecodeGemvShape)
{
    check_combination(JAL_DT_F32, JAL_DT_MXFP4, 1, 96, 2880, 300);
    check_combination(JAL_DT_Q8_0, JAL_DT_MXFP4, 1, 96, 2880, 301);
}

TEST(NumericsMma, FewRowsOfUnblockedBAnyNAndK)
{
    // One to four rows of a against an F32, BF16 or F16 b: the AVX2 GEMV path, with strips
    // of 8 and 32 rows of b cut short and k tails past the 8-wide steps
    uint32_t seed = 500;
    for (uint32_t M : {1u, 2u, 3u, 4u})
        for (jal_dtype b : {JAL_DT_F32, JAL_DT_BF16, JAL_DT_F16}) {
            for (uint32_t N : {1u, 9u, 37u, 70u})
                for (uint32_t K : {1u, 7u, 8u, 13u, 264u})
                    check_combination(JAL_DT_F32, b, M, N, K, seed++);
            check_combination(JAL_DT_MXFP8_E4M3, b, M, 33, 64, seed++);
            check_combination(JAL_DT_BF16, b, M, 41, 72, seed++);
        }
}

TEST(NumericsMma, Mxfp4GemvInGroupsOfRowsAndScalesOfEveryExponent)
{
    // One to four rows of a against MXFP4 b: the AVX-512 kernel takes whole groups of 64
    // (one row of a) or 32 rows of b and the AVX2 kernel the rest, so N runs across and
    // past group edges; every scale byte 0..255 appears (0xff: NaN), activations include
    // zeros, subnormals and infinities, and each path must give the scalar code's bits.
    std::mt19937 rng(77);
    uint32_t seed = 700;
    size_t outputs = 0, finite = 0;
    for (uint32_t M : {1u, 2u, 3u, 4u})
        for (uint32_t N : {16u, 31u, 32u, 33u, 64u, 65u, 96u, 127u, 128u, 130u})
            for (uint32_t K : {32u, 64u, 544u}) {
                std::mt19937 r(seed++);
                Matrix a = random_matrix(JAL_DT_F32, M, K, r);
                Matrix b = random_matrix(JAL_DT_MXFP4, N, K, r);
                // One block in eight with any scale, the rest near 1 (so that most outputs
                // stay finite and the comparison says something).
                for (uint32_t n = 0; n < N; n++)
                    for (uint32_t blk = 0; blk < K / 32; blk++)
                        b.bytes[size_t(n) * b.stride + blk * 17] =
                            uint8_t(rng() % 8 ? 112 + rng() % 30 : rng());
                const float specials[] = {0.0f, -0.0f, 0x1p-140f, -0x1p-149f, 3e38f, INFINITY};
                for (uint32_t m = 0; m < M; m++)
                    std::memcpy(a.bytes.data() + size_t(m) * a.stride + 4 * (rng() % K),
                                &specials[rng() % (seed % 5 ? 5 : 6)], 4);
                auto acc0 = random_acc(M, N, r);
                const std::string what = "F32 x MXFP4 M=" + std::to_string(M) +
                                         " N=" + std::to_string(N) + " K=" + std::to_string(K);
                auto want = reference_loop(acc0, a, b);
                for (float& w : want)  // the MMA's NaNs are canonical (NaNResultsAreCanonical)
                    if (std::isnan(w)) w = float_of(0x7fc00000u);
                auto scalar = run_mma(Isa::scalar, acc0, a, b);
                expect_bits_equal(want, scalar, what + " (scalar)");
                outputs += scalar.size();
                finite += size_t(std::count_if(scalar.begin(), scalar.end(),
                                               [](float v) { return std::isfinite(v); }));
                if (host_has_avx2())
                    expect_bits_equal(scalar, run_mma(Isa::avx2, acc0, a, b), what + " (avx2)");
                if (host_has_avx512())
                    expect_bits_equal(scalar, run_mma(Isa::avx512, acc0, a, b), what + " (avx512)");
            }
    EXPECT_GT(finite, outputs * 3 / 4) << "too few finite outputs to compare";
}

// The MXFP4 GEMV at extreme magnitudes, four families of operands: scales, activations and
// partial sums spread over the exponent range (2^-90 .. 2^60, scales 2^-108 .. 2^102);
// sums that cancel to their roundings; products deep in the subnormals (tiny activations,
// scales near 2^-100, sums from 0), where every step of the chain rounds to the subnormal
// grid; and products near the top of the range (scales near 2^90) whose partial sums
// overflow and may come back. Each path must give the scalar code's bits. (A kernel that
// took a block's power-of-two scale out of the chain, rounding at the end instead of at
// every step, fails the last two: docs/performance.md, "Vector ops in place".)
TEST(NumericsMma, Mxfp4GemvExtremeMagnitudes)
{
    std::mt19937 rng(91);
    const int edge_scales[] = {20, 94, 95, 96, 97, 127, 128, 129, 159, 160, 161, 162, 230};
    const int edge_exponents[] = {-90, -66, -65, -64, -63, -20, -1, 0, 3, 38, 39, 40, 41, 60};
    auto pick = [&](const auto& v) { return v[rng() % std::size(v)]; };
    auto in = [&](int lo, int hi) { return lo + int(rng() % unsigned(hi - lo + 1)); };
    auto value = [&](int e) {
        const float mant = 1.0f + float(rng() % 1024) / 1024.0f;
        return (rng() % 2 ? -1.0f : 1.0f) * std::ldexp(mant, e);
    };
    size_t outputs = 0, finite = 0;
    for (int trial = 0; trial < 80; trial++) {
        const int family = trial % 4;  // 0 edges, 1 cancelling, 2 subnormal, 3 overflowing
        const uint32_t M = 1 + trial % 3 / 2, N = 64, K = 96;
        std::mt19937 r(4000 + trial);
        Matrix a = random_matrix(JAL_DT_F32, M, K, r);
        Matrix b = random_matrix(JAL_DT_MXFP4, N, K, r);
        const int ea = pick(edge_exponents);
        for (uint32_t m = 0; m < M; m++)
            for (uint32_t k = 0; k < K; k++) {
                const int e = family == 2   ? in(-45, -30)
                              : family == 3 ? in(28, 31)
                              : rng() % 4   ? ea
                                            : pick(edge_exponents);
                const float v = rng() % 16 == 0 ? 0.0f : value(e);
                std::memcpy(a.bytes.data() + size_t(m) * a.stride + 4 * k, &v, 4);
            }
        for (uint32_t n = 0; n < N; n++)
            for (uint32_t blk = 0; blk < K / 32; blk++)
                b.bytes[size_t(n) * b.stride + blk * 17] = uint8_t(family == 2   ? in(28, 40)
                                                                   : family == 3 ? in(215, 222)
                                                                   : rng() % 3   ? 127 + in(-2, 2)
                                                                               : pick(edge_scales));
        std::vector<float> acc0(size_t(M) * N, 0.0f);
        if (family < 2)
            for (float& v : acc0) v = rng() % 8 == 0 ? 0.0f : value(pick(edge_exponents));
        if (family == 1) {  // minus the exact sum: what is left is roundings, near 0
            const auto sum = reference_loop(std::vector<float>(acc0.size(), 0.0f), a, b);
            for (size_t i = 0; i < acc0.size(); i++) acc0[i] = -sum[i];
        }
        const std::string what = "trial " + std::to_string(trial);
        auto want = reference_loop(acc0, a, b);
        for (float& w : want)
            if (std::isnan(w)) w = float_of(0x7fc00000u);
        auto scalar = run_mma(Isa::scalar, acc0, a, b);
        expect_bits_equal(want, scalar, what + " (scalar)");
        if (family != 3) {
            outputs += scalar.size();
            finite += size_t(std::count_if(scalar.begin(), scalar.end(),
                                           [](float v) { return std::isfinite(v) && v != 0; }));
        }
        if (host_has_avx512())
            expect_bits_equal(scalar, run_mma(Isa::avx512, acc0, a, b), what + " (avx512)");
    }
    EXPECT_GT(finite, outputs / 2) << "too few finite, nonzero outputs to compare";
}

TEST(NumericsMma, UnblockedFormatsTakeAnyK)
{
    for (uint32_t K : {1u, 5u, 7u, 37u, 300u})
        for (jal_dtype a : {JAL_DT_F32, JAL_DT_BF16, JAL_DT_F16})
            for (jal_dtype b : {JAL_DT_F32, JAL_DT_BF16, JAL_DT_F16})
                check_combination(a, b, 3, 19, K, 400 + K);
}

TEST(NumericsMma, NaNResultsAreCanonical)
{
    std::mt19937 rng(5);
    Matrix a = random_matrix(JAL_DT_F32, 2, 64, rng), b = random_matrix(JAL_DT_MXFP4, 9, 64, rng);
    float snan = float_of(0xffa00001u);
    std::memcpy(a.bytes.data() + 4 * 3, &snan, 4);  // row 0 gets a NaN
    b.bytes[size_t(4) * b.stride + 17] = 0xff;      // row 4's second block has a NaN scale
    auto acc0 = random_acc(2, 9, rng);
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
        auto out = run_mma(isa, acc0, a, b);
        for (uint32_t m = 0; m < 2; m++)
            for (uint32_t n = 0; n < 9; n++) {
                bool nan = m == 0 || n == 4;
                if (nan) {
                    EXPECT_EQ(0x7fc00000u, bits_of(out[m * 9 + n])) << m << "," << n;
                } else {
                    EXPECT_FALSE(std::isnan(out[m * 9 + n])) << m << "," << n;
                }
            }
    }
}

TEST(NumericsMma, RejectsTilesThatDoNotFit)
{
    std::vector<float> acc(64 * 64, 1.0f);
    std::vector<uint8_t> a(1 << 16), b(1 << 16);
    auto A = [&](jal_dtype dt, uint32_t rows, uint32_t cols, uint32_t stride = 0) {
        return ConstTile{a.data(), rows, cols, stride ? stride : uint32_t(row_bytes(dt, cols)), dt};
    };
    auto B = [&](jal_dtype dt, uint32_t rows, uint32_t cols, uint32_t stride = 0) {
        return ConstTile{b.data(), rows, cols, stride ? stride : uint32_t(row_bytes(dt, cols)), dt};
    };
    Tile acc4{acc.data(), 4, 4, 16, JAL_DT_F32};
    struct Case {
        const char* what;
        Tile acc;
        ConstTile a, b;
    };
    const Case cases[] = {
        {"acc not F32", Tile{acc.data(), 4, 4, 16, JAL_DT_BF16}, A(JAL_DT_F32, 4, 32),
         B(JAL_DT_F32, 4, 32)},
        {"K differs", acc4, A(JAL_DT_F32, 4, 32), B(JAL_DT_F32, 4, 64)},
        {"M differs", acc4, A(JAL_DT_F32, 3, 32), B(JAL_DT_F32, 4, 32)},
        {"N differs", acc4, A(JAL_DT_F32, 4, 32), B(JAL_DT_F32, 5, 32)},
        {"K not a block multiple", acc4, A(JAL_DT_F32, 4, 48), B(JAL_DT_MXFP4, 4, 48)},
        {"b Q8_0 with a F32", acc4, A(JAL_DT_F32, 4, 32), B(JAL_DT_Q8_0, 4, 32)},
        {"a I32", acc4, A(JAL_DT_I32, 4, 32), B(JAL_DT_F32, 4, 32)},
        {"b I32", acc4, A(JAL_DT_F32, 4, 32), B(JAL_DT_I32, 4, 32)},
        {"stride shorter than a row", acc4, A(JAL_DT_F32, 4, 32, 64), B(JAL_DT_F32, 4, 32)},
        {"larger than L1", Tile{acc.data(), 2, 4, 4u << 20, JAL_DT_F32}, A(JAL_DT_F32, 2, 32),
         B(JAL_DT_F32, 4, 32)},
        {"K zero", acc4, A(JAL_DT_F32, 4, 0), B(JAL_DT_F32, 4, 0)},
    };
    for (const Case& c : cases) {
        std::vector<float> before = acc;
        std::string err;
        EXPECT_EQ(JAL_STATUS_INVALID_FIELD, mma(c.acc, c.a, c.b, &err)) << c.what;
        EXPECT_FALSE(err.empty()) << c.what;
        EXPECT_EQ(0, std::memcmp(before.data(), acc.data(), acc.size() * 4))
            << c.what << ": acc changed";
    }
    EXPECT_EQ(JAL_STATUS_OK, mma(acc4, A(JAL_DT_F32, 4, 32), B(JAL_DT_F32, 4, 32)));
}

TEST(NumericsMma, InputSharingMemoryWithAccIsReadBeforeTheWrite)
{
    // acc occupies a's rows 1.. (the same L1 bytes): a is read as it was before the MMA
    std::mt19937 rng(8);
    const uint32_t M = 7, N = 16, K = 64;
    Matrix b = random_matrix(JAL_DT_MXFP4, N, K, rng);
    std::vector<float> mem(size_t(M + 1) * K);
    std::uniform_real_distribution<float> val(-2.0f, 2.0f);
    for (auto& v : mem) v = val(rng);
    Matrix a{JAL_DT_F32, M, K, K * 4, {}};
    a.bytes.resize(size_t(M) * K * 4);
    std::memcpy(a.bytes.data(), mem.data(), a.bytes.size());
    std::vector<float> acc0(size_t(M) * N);
    for (uint32_t m = 0; m < M; m++)
        std::memcpy(acc0.data() + size_t(m) * N, mem.data() + size_t(m + 1) * K, N * 4);
    auto want = reference_loop(acc0, a, b);
    for (Isa isa : {Isa::scalar, Isa::avx2}) {
        std::vector<float> buf = mem;
        force_isa(isa);
        Tile acc{buf.data() + K, M, N, K * 4, JAL_DT_F32};
        ConstTile ta{buf.data(), M, K, K * 4, JAL_DT_F32};
        ASSERT_EQ(JAL_STATUS_OK, mma(acc, ta, b.tile()));
        std::vector<float> got(size_t(M) * N);
        for (uint32_t m = 0; m < M; m++)
            std::memcpy(got.data() + size_t(m) * N, buf.data() + size_t(m + 1) * K, N * 4);
        expect_bits_equal(want, got, isa == Isa::scalar ? "scalar" : "avx2");
    }
    force_isa(best_isa());
}

namespace {

// b's transpose, K rows of N, with 20 bytes of padding after each row.
Matrix k_major(const Matrix& b)
{
    const size_t es = b.dtype == JAL_DT_F32 ? 4 : 2;
    Matrix t{b.dtype, b.cols, b.rows, uint32_t(es * b.rows + 20), {}};
    t.bytes.assign(size_t(t.stride) * t.rows, 0x3c);
    for (uint32_t n = 0; n < b.rows; n++)
        for (uint32_t k = 0; k < b.cols; k++)
            std::memcpy(t.bytes.data() + size_t(k) * t.stride + n * es,
                        b.bytes.data() + size_t(n) * b.stride + k * es, es);
    return t;
}

// The K-major MMA on every path gives the semantics' bits for b's transpose.
void check_kmajor(jal_dtype adt, jal_dtype bdt, uint32_t M, uint32_t N, uint32_t K, uint32_t seed)
{
    std::mt19937 rng(seed);
    Matrix a = random_matrix(adt, M, K, rng), b = random_matrix(bdt, N, K, rng);
    const Matrix b_t = k_major(b);
    auto acc0 = random_acc(M, N, rng);
    const std::string what = name(adt) + " x " + name(bdt) + " K-major M=" + std::to_string(M) +
                             " N=" + std::to_string(N) + " K=" + std::to_string(K);
    auto want = reference_loop(acc0, a, b);
    expect_bits_equal(want, run_mma(Isa::scalar, acc0, a, b_t, true), what + " (scalar)");
    if (host_has_avx2())
        expect_bits_equal(want, run_mma(Isa::avx2, acc0, a, b_t, true), what + " (avx2)");
    if (host_has_avx512())
        expect_bits_equal(want, run_mma(Isa::avx512, acc0, a, b_t, true), what + " (avx512)");
}

}  // namespace

TEST(NumericsMma, KMajorBGivesTheBitsOfItsTranspose)
{
    // N across and past the vector kernels' 8, 16, 32 and 64 columns (masked and one-by-one
    // tails), M across their blocks of four rows, every a format
    uint32_t seed = 900;
    for (jal_dtype b : {JAL_DT_F32, JAL_DT_BF16, JAL_DT_F16}) {
        for (uint32_t M : {1u, 2u, 3u, 4u, 5u, 9u})
            for (uint32_t N : {1u, 7u, 8u, 16u, 17u, 33u, 64u, 65u, 100u})
                for (uint32_t K : {1u, 3u, 64u}) check_kmajor(JAL_DT_F32, b, M, N, K, seed++);
        for (jal_dtype a : kA) check_kmajor(a, b, 3, 40, 96, seed++);
    }
    check_kmajor(JAL_DT_F32, JAL_DT_F32, 1, 192, 512, seed++);  // a decode GEMV's tile
}

TEST(NumericsMma, KMajorNaNResultsAreCanonical)
{
    std::mt19937 rng(6);
    Matrix a = random_matrix(JAL_DT_F32, 2, 32, rng), b = random_matrix(JAL_DT_F32, 21, 32, rng);
    const float snan = float_of(0xffa00001u), qnan = float_of(0x7fc01234u);
    std::memcpy(a.bytes.data() + 4 * 3, &snan, 4);                      // row 0 of a
    std::memcpy(b.bytes.data() + size_t(18) * b.stride + 4, &qnan, 4);  // row 18 of b
    const Matrix b_t = k_major(b);
    auto acc0 = random_acc(2, 21, rng);
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512}) {
        auto out = run_mma(isa, acc0, a, b_t, true);
        for (uint32_t m = 0; m < 2; m++)
            for (uint32_t n = 0; n < 21; n++) {
                if (m == 0 || n == 18)
                    EXPECT_EQ(0x7fc00000u, bits_of(out[m * 21 + n])) << m << "," << n;
                else
                    EXPECT_FALSE(std::isnan(out[m * 21 + n])) << m << "," << n;
            }
    }
}

TEST(NumericsMma, KMajorRejectsBlockFormatsAndShapesThatDoNotMatch)
{
    std::vector<float> acc(64, 1.0f);
    std::vector<uint8_t> a(1 << 14), b(1 << 14);
    Tile acc4{acc.data(), 2, 4, 16, JAL_DT_F32};
    const ConstTile a32{a.data(), 2, 32, 128, JAL_DT_F32};
    struct Case {
        const char* what;
        ConstTile b;
    };
    const Case cases[] = {
        {"b MXFP4", ConstTile{b.data(), 32, 4, 17, JAL_DT_MXFP4}},
        {"b MXFP8", ConstTile{b.data(), 32, 32, 33, JAL_DT_MXFP8_E4M3}},
        {"N differs (b's columns)", ConstTile{b.data(), 32, 5, 20, JAL_DT_F32}},
        {"K differs (b's rows)", ConstTile{b.data(), 31, 4, 16, JAL_DT_F32}},
        {"b in the weight layout's shape", ConstTile{b.data(), 4, 32, 128, JAL_DT_F32}},
    };
    for (const Case& c : cases) {
        const std::vector<float> before = acc;
        std::string err;
        EXPECT_EQ(JAL_STATUS_INVALID_FIELD, mma_kmajor(acc4, a32, c.b, &err)) << c.what;
        EXPECT_FALSE(err.empty()) << c.what;
        EXPECT_EQ(before, acc) << c.what << ": acc changed";
    }
    EXPECT_EQ(JAL_STATUS_OK, mma_kmajor(acc4, a32, ConstTile{b.data(), 32, 4, 16, JAL_DT_F32}));
}
