// MMA with a K-major b (K rows of N; ISA 1.4's JAL_MMA_B_KMAJOR): the scalar definition and
// the AVX2 and AVX-512 kernels, which give the same bits. Every output sees
// fma(a[m][k], b[k][n], acc) for k = 0, 1, ... in order, as mma.cpp's case (b) does with
// b[n][k]. With b K-major a row of b is sixteen (eight) outputs' weights for one k, so the
// vector kernels load it and fuse it into those outputs' accumulators: no transposes, which
// is what the weight layout's GEMV (mma_avx2_gemv.cpp) spends most of its time on.
#include <jal/isa/tile_math.hpp>

#include "bits.hpp"
#include "kernels.hpp"
#include "scratch.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

namespace jal::numerics {

void mma_kmajor_scalar(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    const size_t K = a.cols, N = acc.cols;
    std::vector<float> bf(K * N), af(K), row(N);
    for (size_t k = 0; k < K; k++) dequantize_row(b.dtype, tile_at(b, k, 0), bf.data() + k * N, N);
    for (uint32_t m = 0; m < acc.rows; m++) {
        dequantize_row(a.dtype, tile_at(a, m, 0), af.data(), K);
        unsigned char* out = acc_row(acc, m);
        std::memcpy(row.data(), out, N * 4);
        for (size_t n = 0; n < N; n++) {
            float s = row[n];
            for (size_t k = 0; k < K; k++) s = std::fma(af[k], bf[k * N + n], s);
            row[n] = s;
        }
        std::memcpy(out, row.data(), N * 4);
    }
}

}  // namespace jal::numerics

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start several intrinsics from _mm512_undefined_*() and then warn
// that the value is used uninitialized (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#define JAL_AVX2_KM __attribute__((target("avx2,fma,f16c")))
#define JAL_AVX512_KM __attribute__((target("avx512f,avx512bw,avx512vl,avx2,fma,f16c")))

namespace jal::numerics {

namespace {

constexpr int kU = 4;  // vectors of outputs a row of a accumulates into at once

// a's rows decoded to F32 (K floats a row), in a buffer kept per host thread (scratch.hpp):
// given back after the MMA if a huge tile grew it.
thread_local std::vector<float> a_rows;

const float* decoded_rows(const ConstTile& a, uint32_t m0, uint32_t rows)
{
    const size_t K = a.cols;
    float* af = grown(a_rows, size_t(rows) * K);
    for (uint32_t r = 0; r < rows; r++)
        dequantize_row(a.dtype, tile_at(a, m0 + r, 0), af + size_t(r) * K, K);
    return af;
}

// f(integral_constant<jal_dtype, b's dtype>) for an F32, BF16 or F16 b, then a_rows trimmed.
template <class F>
void by_b_dtype(jal_dtype dt, F&& f)
{
    if (dt == JAL_DT_F32)
        f(std::integral_constant<jal_dtype, JAL_DT_F32>{});
    else if (dt == JAL_DT_BF16)
        f(std::integral_constant<jal_dtype, JAL_DT_BF16>{});
    else
        f(std::integral_constant<jal_dtype, JAL_DT_F16>{});
    trimmed(a_rows);
}

// ---- AVX-512: sixteen outputs a vector, the last ones masked ----

template <jal_dtype DT>
JAL_AVX512_KM inline __m512 load16(const unsigned char* p, __mmask16 m)
{
    if constexpr (DT == JAL_DT_F32) {
        return _mm512_maskz_loadu_ps(m, p);
    } else {
        const __m256i h = _mm256_maskz_loadu_epi16(m, p);
        if constexpr (DT == JAL_DT_BF16)
            return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        else
            return _mm512_cvtph_ps(h);
    }
}

// Columns [n0, n0 + cols) (cols ≤ 16 kU) of rows [m0, m0 + R) of acc.
template <jal_dtype DT, int R>
JAL_AVX512_KM void block512(const Tile& acc, const ConstTile& b, const float* af, uint32_t m0,
                            uint32_t n0, uint32_t cols)
{
    constexpr size_t es = DT == JAL_DT_F32 ? 4 : 2;
    const size_t K = b.rows;
    // Every loop over r and u unrolled, so that the accumulators stay in registers.
    __mmask16 mk[kU];
#pragma GCC unroll 4
    for (int u = 0; u < kU; u++) {
        const int left = std::clamp(int(cols) - 16 * u, 0, 16);
        mk[u] = static_cast<__mmask16>((uint32_t{1} << left) - 1);
    }
    __m512 c[R][kU];
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int u = 0; u < kU; u++)
            c[r][u] = _mm512_maskz_loadu_ps(mk[u], acc_row(acc, m0 + r) + size_t(n0 + 16 * u) * 4);
    const unsigned char* brow = tile_at(b, 0, 0) + size_t(n0) * es;
    for (size_t k = 0; k < K; k++, brow += b.stride) {
        __m512 bv[kU];
#pragma GCC unroll 4
        for (int u = 0; u < kU; u++) bv[u] = load16<DT>(brow + 16 * u * es, mk[u]);
#pragma GCC unroll 4
        for (int r = 0; r < R; r++) {
            const __m512 av = _mm512_set1_ps(af[size_t(r) * K + k]);
#pragma GCC unroll 4
            for (int u = 0; u < kU; u++) c[r][u] = _mm512_fmadd_ps(av, bv[u], c[r][u]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < R; r++)
#pragma GCC unroll 4
        for (int u = 0; u < kU; u++)
            _mm512_mask_storeu_ps(acc_row(acc, m0 + r) + size_t(n0 + 16 * u) * 4, mk[u], c[r][u]);
}

template <jal_dtype DT>
void run512(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    constexpr uint32_t kCols = 16 * kU;
    for (uint32_t m0 = 0; m0 < acc.rows; m0 += 4) {
        const uint32_t rows = std::min<uint32_t>(4, acc.rows - m0);
        const float* af = decoded_rows(a, m0, rows);
        for (uint32_t n0 = 0; n0 < acc.cols; n0 += kCols) {
            const uint32_t cols = std::min(kCols, acc.cols - n0);
            switch (rows) {
            case 1:
                block512<DT, 1>(acc, b, af, m0, n0, cols);
                break;
            case 2:
                block512<DT, 2>(acc, b, af, m0, n0, cols);
                break;
            case 3:
                block512<DT, 3>(acc, b, af, m0, n0, cols);
                break;
            default:
                block512<DT, 4>(acc, b, af, m0, n0, cols);
                break;
            }
        }
    }
}

// ---- AVX2: eight outputs a vector; the columns past the last whole vector one by one ----

template <jal_dtype DT>
JAL_AVX2_KM inline __m256 load8(const unsigned char* p)
{
    if constexpr (DT == JAL_DT_F32) {
        return _mm256_loadu_ps(reinterpret_cast<const float*>(p));
    } else {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        if constexpr (DT == JAL_DT_BF16)
            return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        else
            return _mm256_cvtph_ps(h);
    }
}

template <jal_dtype DT>
inline float load1(const unsigned char* p)
{
    if constexpr (DT == JAL_DT_F32) {
        float f;
        std::memcpy(&f, p, 4);
        return f;
    } else {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return DT == JAL_DT_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
}

// Columns [n0, n0 + 8 U) of row m of acc (af: that row of a).
template <jal_dtype DT, int U>
JAL_AVX2_KM void block256(const Tile& acc, const ConstTile& b, const float* af, uint32_t m,
                          uint32_t n0)
{
    constexpr size_t es = DT == JAL_DT_F32 ? 4 : 2;
    unsigned char* out = acc_row(acc, m) + size_t(n0) * 4;
    __m256 c[U];
#pragma GCC unroll 4
    for (int u = 0; u < U; u++) c[u] = _mm256_loadu_ps(reinterpret_cast<float*>(out) + 8 * u);
    const unsigned char* brow = tile_at(b, 0, 0) + size_t(n0) * es;
    for (size_t k = 0; k < b.rows; k++, brow += b.stride) {
        const __m256 av = _mm256_set1_ps(af[k]);
#pragma GCC unroll 4
        for (int u = 0; u < U; u++) c[u] = _mm256_fmadd_ps(av, load8<DT>(brow + 8 * u * es), c[u]);
    }
#pragma GCC unroll 4
    for (int u = 0; u < U; u++) _mm256_storeu_ps(reinterpret_cast<float*>(out) + 8 * u, c[u]);
}

// Column n of row m alone: the same fused multiply-adds, one lane.
template <jal_dtype DT>
JAL_AVX2_KM void column1(const Tile& acc, const ConstTile& b, const float* af, uint32_t m,
                         uint32_t n)
{
    constexpr size_t es = DT == JAL_DT_F32 ? 4 : 2;
    unsigned char* out = acc_row(acc, m) + size_t(n) * 4;
    float s;
    std::memcpy(&s, out, 4);
    __m128 c = _mm_set_ss(s);
    const unsigned char* bp = tile_at(b, 0, 0) + size_t(n) * es;
    for (size_t k = 0; k < b.rows; k++, bp += b.stride)
        c = _mm_fmadd_ss(_mm_set_ss(af[k]), _mm_set_ss(load1<DT>(bp)), c);
    s = _mm_cvtss_f32(c);
    std::memcpy(out, &s, 4);
}

template <jal_dtype DT>
void run256(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    for (uint32_t m = 0; m < acc.rows; m++) {
        const float* af = decoded_rows(a, m, 1);
        uint32_t n0 = 0;
        for (; n0 + 32 <= acc.cols; n0 += 32) block256<DT, 4>(acc, b, af, m, n0);
        for (; n0 + 8 <= acc.cols; n0 += 8) block256<DT, 1>(acc, b, af, m, n0);
        for (; n0 < acc.cols; n0++) column1<DT>(acc, b, af, m, n0);
    }
}

}  // namespace

void mma_kmajor_avx512(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    by_b_dtype(b.dtype, [&](auto dt) { run512<decltype(dt)::value>(acc, a, b); });
}

void mma_kmajor_avx2(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    by_b_dtype(b.dtype, [&](auto dt) { run256<decltype(dt)::value>(acc, a, b); });
}

}  // namespace jal::numerics

#pragma GCC diagnostic pop

#else  // not x86-64: the scalar definition

namespace jal::numerics {
void mma_kmajor_avx512(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    mma_kmajor_scalar(acc, a, b);
}
void mma_kmajor_avx2(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    mma_kmajor_scalar(acc, a, b);
}
}  // namespace jal::numerics

#endif
