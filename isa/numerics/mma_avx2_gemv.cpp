// MMA with few rows of a (decode's GEMVs) and an F32, BF16 or F16 b, with AVX2: the same
// bits as mma.cpp's scalar code. mma_avx2.cpp's panel path decodes b into rows, transposes
// them into a K-major panel in memory and then reads the panel once per block of a's rows:
// with one to four rows of a, the decode and the transpose through memory cost more than
// the multiply-adds. Here eight rows of b are loaded straight from the tile, eight k at a
// time, transposed in registers, and fused into the eight outputs' accumulators k by k:
// every output still sees fma(a[m][k], b[n][k], acc) for k = 0, 1, ... in order.
#include <jal/isa/tile_math.hpp>

#include "avx2.hpp"
#include "kernels.hpp"
#include "scratch.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__)

namespace jal::numerics {

namespace {

// b[n][k .. k+8) of one BF16 or F16 row, as floats (exact).
template <jal_dtype DT>
JAL_AVX2 inline __m256 load8(const unsigned char* row, size_t k)
{
    if constexpr (DT == JAL_DT_BF16) {
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k));
        return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    } else {
        return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * k)));
    }
}

// b[n][k] alone, decoded as mma_avx2.cpp's panel path decodes a row's tail.
template <jal_dtype DT>
inline float load1(const unsigned char* row, size_t k)
{
    if constexpr (DT == JAL_DT_F32) {
        float f;
        std::memcpy(&f, row + 4 * k, 4);
        return f;
    } else {
        uint16_t h;
        std::memcpy(&h, row + 2 * k, 2);
        return DT == JAL_DT_BF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
}

// Columns k .. k+8 of eight F32 rows: v[i] lane r = rows[r][k + i]. Rows r and r + 4 are
// loaded into the two halves of one register, so only in-lane 4 x 4 transposes remain
// (16 shuffles instead of transpose8's 24, which all compete for one execution port).
JAL_AVX2 inline void columns8_f32(const unsigned char* const* rp, size_t k, __m256* v)
{
#pragma GCC unroll 2
    for (int h = 0; h < 2; h++) {
        const size_t off = 4 * (k + 4 * size_t(h));
        __m256 t[4];
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++)
            t[r] = _mm256_insertf128_ps(
                _mm256_castps128_ps256(_mm_loadu_ps(reinterpret_cast<const float*>(rp[r] + off))),
                _mm_loadu_ps(reinterpret_cast<const float*>(rp[r + 4] + off)), 1);
        const __m256 a0 = _mm256_unpacklo_ps(t[0], t[1]), a1 = _mm256_unpackhi_ps(t[0], t[1]);
        const __m256 a2 = _mm256_unpacklo_ps(t[2], t[3]), a3 = _mm256_unpackhi_ps(t[2], t[3]);
        v[4 * h + 0] = _mm256_shuffle_ps(a0, a2, 0x44);
        v[4 * h + 1] = _mm256_shuffle_ps(a0, a2, 0xee);
        v[4 * h + 2] = _mm256_shuffle_ps(a1, a3, 0x44);
        v[4 * h + 3] = _mm256_shuffle_ps(a1, a3, 0xee);
    }
}

// c[m][s * 8 + r] (MM rows of S * 8) += a[m][.] x rows[s * 8 + r][.] over K, k in order.
// a is MM rows of K floats.
template <jal_dtype DT, int MM, int S>
JAL_AVX2 void gemv_strips(const float* a, size_t K, const unsigned char* const* rows, float* c)
{
    // Every loop below over m, s, r or i is unrolled (GCC left the fma loop rolled, with
    // the accumulator stored and reloaded each k and v spilled: a third of the speed).
    __m256 acc[MM][S];
#pragma GCC unroll 4
    for (int m = 0; m < MM; m++)
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) acc[m][s] = _mm256_loadu_ps(c + (m * S + s) * 8);
    size_t k = 0;
    for (; k + 8 <= K; k += 8) {
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) {
            const unsigned char* const* rp = rows + s * 8;
            __m256 v[8];  // v[i]: column k + i
            if constexpr (DT == JAL_DT_F32) {
                columns8_f32(rp, k, v);
            } else {
#pragma GCC unroll 8
                for (int r = 0; r < 8; r++) v[r] = load8<DT>(rp[r], k);
                transpose8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
            }
#pragma GCC unroll 4
            for (int m = 0; m < MM; m++)
#pragma GCC unroll 8
                for (int i = 0; i < 8; i++)
                    acc[m][s] =
                        _mm256_fmadd_ps(_mm256_broadcast_ss(a + m * K + k + i), v[i], acc[m][s]);
        }
    }
    for (; k < K; k++) {
        for (int s = 0; s < S; s++) {
            const unsigned char* const* rp = rows + s * 8;
            const __m256 v = _mm256_setr_ps(
                load1<DT>(rp[0], k), load1<DT>(rp[1], k), load1<DT>(rp[2], k), load1<DT>(rp[3], k),
                load1<DT>(rp[4], k), load1<DT>(rp[5], k), load1<DT>(rp[6], k), load1<DT>(rp[7], k));
            for (int m = 0; m < MM; m++)
                acc[m][s] = _mm256_fmadd_ps(_mm256_broadcast_ss(a + m * K + k), v, acc[m][s]);
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < MM; m++)
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) _mm256_storeu_ps(c + (m * S + s) * 8, acc[m][s]);
}

// Every output column, S * 8 rows of b at a time (rows past the tile's end read
// zero_row, and their results are dropped).
template <jal_dtype DT, int MM, int S>
JAL_AVX2 void gemv_run(const Tile& acc, const ConstTile& b, const float* a,
                       const unsigned char* zero_row)
{
    const uint32_t N = acc.cols;
    const size_t K = b.cols;
    constexpr int W = 8 * S;
    for (uint32_t n0 = 0; n0 < N; n0 += W) {
        const int nw = int(std::min<uint32_t>(W, N - n0));
        const unsigned char* rows[W];
        for (int r = 0; r < W; r++) rows[r] = r < nw ? tile_at(b, n0 + r, 0) : zero_row;
        float c[MM * W] = {};
        for (int m = 0; m < MM; m++)
            std::memcpy(c + m * W, acc_row(acc, m) + size_t(n0) * 4, size_t(nw) * 4);
        gemv_strips<DT, MM, S>(a, K, rows, c);
        for (int m = 0; m < MM; m++)
            std::memcpy(acc_row(acc, m) + size_t(n0) * 4, c + m * W, size_t(nw) * 4);
    }
}

// The row count picks the strip width: enough independent accumulators to hide the fma
// latency, few enough to stay in the sixteen registers beside the eight of b.
template <jal_dtype DT>
void gemv_rows(const Tile& acc, const ConstTile& b, const float* a, const unsigned char* zero_row)
{
    switch (acc.rows) {
    case 1:
        gemv_run<DT, 1, 4>(acc, b, a, zero_row);
        break;
    case 2:
        gemv_run<DT, 2, 2>(acc, b, a, zero_row);
        break;
    case 3:
        gemv_run<DT, 3, 1>(acc, b, a, zero_row);
        break;
    default:
        gemv_run<DT, 4, 1>(acc, b, a, zero_row);
        break;
    }
}

}  // namespace

bool mma_fma_gemv_avx2(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    if (acc.rows == 0 || acc.rows > 4) return false;
    if (b.dtype != JAL_DT_F32 && b.dtype != JAL_DT_BF16 && b.dtype != JAL_DT_F16) return false;
    const size_t K = a.cols;
    thread_local std::vector<float> af_buf;  // scratch.hpp: why per thread
    thread_local std::vector<unsigned char> zero_buf;
    float* af = grown(af_buf, size_t(acc.rows) * K);
    for (uint32_t m = 0; m < acc.rows; m++)
        dequantize_row(a.dtype, tile_at(a, m, 0), af + size_t(m) * K, K);
    if (zero_buf.size() < K * 4) zero_buf.assign(K * 4, 0);  // only ever read
    if (b.dtype == JAL_DT_F32)
        gemv_rows<JAL_DT_F32>(acc, b, af, zero_buf.data());
    else if (b.dtype == JAL_DT_BF16)
        gemv_rows<JAL_DT_BF16>(acc, b, af, zero_buf.data());
    else
        gemv_rows<JAL_DT_F16>(acc, b, af, zero_buf.data());
    trimmed(af_buf);
    trimmed(zero_buf);
    return true;
}

}  // namespace jal::numerics

#else  // not x86-64: mma_avx2.cpp falls back to the scalar code

namespace jal::numerics {
bool mma_fma_gemv_avx2(const Tile&, const ConstTile&, const ConstTile&)
{
    return false;
}
}  // namespace jal::numerics

#endif
