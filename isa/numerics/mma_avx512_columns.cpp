// Case (b) of MMA with many rows of an F32 a and one to four rows of b, with AVX-512: the
// attention's scores at decode (a chunk of cached keys times a query) have this shape.
// The general kernel (mma_avx2.cpp) vectorizes over b's rows, so with one of them it
// computed a panel of eight (or sixteen) outputs to keep one; this one puts sixteen rows of
// a in a register, one lane a row, gathered a column at a time, and keeps every output.
// Every output still sees fma(a[m][k], b[n][k], acc) for k = 0, 1, ... in order: the same
// bits as mma.cpp's scalar code.
#include <jal/isa/tile_math.hpp>

#include "kernels.hpp"
#include "scratch.hpp"

#include <algorithm>
#include <vector>

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start several intrinsics from _mm512_undefined_*() and then warn
// that the value is used uninitialized (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#define JAL_AVX512_COLS __attribute__((target("avx512f,avx2,fma")))

namespace jal::numerics {

namespace {

// Rows [m0, m0 + 16) of acc (the lanes past M masked off), every column; bf: b's NN rows
// decoded to F32, K floats each.
template <int NN>
JAL_AVX512_COLS void sixteen_rows(const Tile& acc, const ConstTile& a, const float* bf, uint32_t m0)
{
    const size_t K = a.cols;
    const uint32_t rows = std::min<uint32_t>(16, acc.rows - m0);
    const __mmask16 live = static_cast<__mmask16>((uint32_t{1} << rows) - 1);
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    // Byte offsets (scale 1): rows need not be 4-byte aligned in L1.
    const __m512i a_rows = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(int(a.stride)));
    const __m512i c_rows = _mm512_mullo_epi32(lanes, _mm512_set1_epi32(int(acc.stride)));
    const unsigned char* a0 = tile_at(a, m0, 0);
    unsigned char* c0 = acc_row(acc, m0);
    __m512 c[NN];
#pragma GCC unroll 4
    for (int n = 0; n < NN; n++)
        c[n] = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, c_rows, c0 + 4 * n, 1);
    for (size_t k = 0; k < K; k++) {
        const __m512 v = _mm512_mask_i32gather_ps(_mm512_setzero_ps(), live, a_rows, a0 + 4 * k, 1);
#pragma GCC unroll 4
        for (int n = 0; n < NN; n++) c[n] = _mm512_fmadd_ps(v, _mm512_set1_ps(bf[n * K + k]), c[n]);
    }
#pragma GCC unroll 4
    for (int n = 0; n < NN; n++) _mm512_mask_i32scatter_ps(c0 + 4 * n, live, c_rows, c[n], 1);
}

template <int NN>
void every_row(const Tile& acc, const ConstTile& a, const float* bf)
{
    for (uint32_t m0 = 0; m0 < acc.rows; m0 += 16) sixteen_rows<NN>(acc, a, bf, m0);
}

}  // namespace

bool mma_fma_columns_avx512(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    // Below sixteen rows the general kernel's panels waste less than the lanes here would.
    if (a.dtype != JAL_DT_F32 || acc.cols == 0 || acc.cols > 4 || acc.rows < 16) return false;
    // The gathers' offsets are 32-bit: fifteen strides must fit.
    if (std::max(a.stride, acc.stride) > (1u << 26)) return false;
    const size_t K = a.cols;
    thread_local std::vector<float> bf_buf;  // scratch.hpp: why per thread
    float* bf = grown(bf_buf, size_t(acc.cols) * K);
    for (uint32_t n = 0; n < acc.cols; n++)
        dequantize_row(b.dtype, tile_at(b, n, 0), bf + n * K, K);
    switch (acc.cols) {
    case 1:
        every_row<1>(acc, a, bf);
        break;
    case 2:
        every_row<2>(acc, a, bf);
        break;
    case 3:
        every_row<3>(acc, a, bf);
        break;
    default:
        every_row<4>(acc, a, bf);
        break;
    }
    trimmed(bf_buf);
    return true;
}

}  // namespace jal::numerics

#pragma GCC diagnostic pop

#else  // not x86-64: the general kernel takes every shape

namespace jal::numerics {
bool mma_fma_columns_avx512(const Tile&, const ConstTile&, const ConstTile&)
{
    return false;
}
}  // namespace jal::numerics

#endif
