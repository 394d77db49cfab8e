// The decode GEMV with an MXFP4 b (one to four rows of a) with AVX-512: the same bits as
// mma.cpp's scalar code and mma_avx2.cpp's direct_mxfp4. Sixteen rows of b share a
// register, one lane a row, so each k of a block is one widen, convert, scale and fused
// multiply-add for sixteen outputs (eight with AVX2). The code bytes of sixteen rows are
// transposed with two rounds of byte permutes across register pairs (VBMI's vpermt2b), and
// the scales of the sixteen rows come in with gathers. Every output still sees
// fma(a[m][k], b[n][k], acc) for k = 0, 1, ... in order.
#include <jal/isa/tile_math.hpp>

#include "kernels.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__x86_64__)
// GCC 12's AVX-512 headers start several intrinsics from _mm512_undefined_*() and then warn
// that the value is used uninitialized (GCC bug 105593, fixed in GCC 13).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#define JAL_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512vbmi,avx2,fma,f16c")))

namespace jal::numerics {

namespace {

constexpr int8_t kValuesMxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
constexpr size_t kBlock = sizeof(jal_block_mxfp4);  // 17 bytes: scale, 16 code bytes
constexpr size_t kScaleRun = 16;                    // blocks whose scales are gathered at once

// The byte permutes of the transpose (operand a: the first register, b: the second).
// Round 1, two registers of four rows each (row r's code byte j at 16 r + j) into one of
// eight rows: byte 8 jj + r = row r's byte j, j = jj + 8 h (h: which half of the bytes).
// Round 2, two such registers (rows 0-7 and 8-15) into one of sixteen rows: byte
// 16 t + r = row r's byte jj = t + 4 q (q: which quarter of the round-1 register).
struct PermuteIndices {
    alignas(64) std::array<uint8_t, 64> round1[2];
    alignas(64) std::array<uint8_t, 64> round2[2];
    PermuteIndices()
    {
        for (int h = 0; h < 2; h++)
            for (int i = 0; i < 64; i++) {
                const int jj = i / 8, r = i % 8, j = jj + 8 * h;
                round1[h][i] = uint8_t(r < 4 ? 16 * r + j : 64 + 16 * (r - 4) + j);
            }
        for (int q = 0; q < 2; q++)
            for (int i = 0; i < 64; i++) {
                const int t = i / 16, r = i % 16, jj = t + 4 * q;
                round2[q][i] = uint8_t(r < 8 ? 8 * jj + r : 64 + 8 * jj + (r - 8));
            }
    }
};

const PermuteIndices& permute_indices()
{
    static const PermuteIndices p;
    return p;
}

// Row l of a four-row group: its sixteen code bytes of the block at `off` in 128-bit lane l.
JAL_AVX512 inline __m512i four_rows(const unsigned char* row0, size_t stride, size_t off)
{
    const unsigned char* p = row0 + off + 1;
    __m512i z = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    z = _mm512_inserti32x4(z, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + stride)), 1);
    z = _mm512_inserti32x4(z, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * stride)), 2);
    return _mm512_inserti32x4(z, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 3 * stride)),
                              3);
}

// The block at `off` of sixteen rows (row0, stride apart) as ggml's doubled integer values,
// k-major: codes[k][r] = row r's value at k of the block.
JAL_AVX512 __attribute__((always_inline)) inline void decode_block16(const unsigned char* row0,
                                                                     size_t stride, size_t off,
                                                                     const __m512i* perm,
                                                                     int8_t (*codes)[16])
{
    const __m512i kv =
        _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kValuesMxfp4)));
    const __m512i m4 = _mm512_set1_epi8(0x0f);
    const __m512i z0 = four_rows(row0, stride, off), z1 = four_rows(row0 + 4 * stride, stride, off);
    const __m512i z2 = four_rows(row0 + 8 * stride, stride, off);
    const __m512i z3 = four_rows(row0 + 12 * stride, stride, off);
    const __m512i lo_a = _mm512_permutex2var_epi8(z0, perm[0], z1);  // bytes 0-7, rows 0-7
    const __m512i lo_b = _mm512_permutex2var_epi8(z0, perm[1], z1);  // bytes 8-15, rows 0-7
    const __m512i hi_a = _mm512_permutex2var_epi8(z2, perm[0], z3);  // bytes 0-7, rows 8-15
    const __m512i hi_b = _mm512_permutex2var_epi8(z2, perm[1], z3);  // bytes 8-15, rows 8-15
    const __m512i t[4] = {_mm512_permutex2var_epi8(lo_a, perm[2], hi_a),
                          _mm512_permutex2var_epi8(lo_a, perm[3], hi_a),
                          _mm512_permutex2var_epi8(lo_b, perm[2], hi_b),
                          _mm512_permutex2var_epi8(lo_b, perm[3], hi_b)};
    // t[q]: code bytes 4q .. 4q+3 of the sixteen rows. A byte's low nibble is k = j, its
    // high nibble k = j + 16 (ggml's block layout).
#pragma GCC unroll 4
    for (int q = 0; q < 4; q++) {
        const __m512i lo = _mm512_shuffle_epi8(kv, _mm512_and_si512(t[q], m4));
        const __m512i hi =
            _mm512_shuffle_epi8(kv, _mm512_and_si512(_mm512_srli_epi16(t[q], 4), m4));
        _mm512_store_si512(reinterpret_cast<__m512i*>(codes[4 * q]), lo);
        _mm512_store_si512(reinterpret_cast<__m512i*>(codes[16 + 4 * q]), hi);
    }
}

// The half scales of sixteen rows' block at `off`: e8m0_to_f32_half of each row's scale
// byte (gathered for a run of blocks ahead of the multiply-adds, so the gather's latency is
// not on the k loop's path), computed as that function does: 2^(e-128) as (e - 1) << 23,
// the two subnormal ones below, and the canonical NaN for 0xff.
JAL_AVX512 __attribute__((always_inline)) inline __m512 scales16(const unsigned char* row0,
                                                                 size_t off, __m512i row_offsets)
{
    const __m512i e = _mm512_and_si512(_mm512_i32gather_epi32(row_offsets, row0 + off, 1),
                                       _mm512_set1_epi32(0xff));
    __m512i bits = _mm512_slli_epi32(_mm512_sub_epi32(e, _mm512_set1_epi32(1)), 23);
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmplt_epu32_mask(e, _mm512_set1_epi32(2)),
                                 _mm512_sllv_epi32(_mm512_set1_epi32(0x00200000), e));
    bits = _mm512_mask_mov_epi32(bits, _mm512_cmpeq_epu32_mask(e, _mm512_set1_epi32(0xff)),
                                 _mm512_set1_epi32(0x7fc00000));
    return _mm512_castsi512_ps(bits);
}

// c[m][s * 16 + r] (MM rows of S * 16) += a[m][.] x row (s * 16 + r) of b over nb blocks,
// k in order; the rows are `stride` apart from row0. a is MM rows of lda floats. [next,
// next + next_bytes) is the next group's rows, prefetched a share a block: the group's
// blocks are read across its rows, an order the hardware prefetchers do not follow, so a b
// read where it lies in memory (a streamed load) would wait on each line.
template <int MM, int S>
JAL_AVX512 void direct_mxfp4_16(const float* a, size_t lda, const unsigned char* row0,
                                size_t stride, size_t nb, float* c, const unsigned char* next,
                                size_t next_bytes)
{
    const size_t pf_share = (next_bytes / nb + 63) & ~size_t{63};
    const PermuteIndices& pi = permute_indices();
    const __m512i perm[4] = {
        _mm512_load_si512(pi.round1[0].data()), _mm512_load_si512(pi.round1[1].data()),
        _mm512_load_si512(pi.round2[0].data()), _mm512_load_si512(pi.round2[1].data())};
    const __m512i row_offsets =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(int(stride)));
    __m512 acc[MM][S];
#pragma GCC unroll 4
    for (int m = 0; m < MM; m++)
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) acc[m][s] = _mm512_loadu_ps(c + (m * S + s) * 16);
    alignas(64) int8_t codes[S][32][16];
    alignas(64) float scales[kScaleRun][S][16];
    for (size_t j = 0; j < nb; j++) {
        for (size_t o = j * pf_share; o < std::min(next_bytes, (j + 1) * pf_share); o += 64)
            _mm_prefetch(reinterpret_cast<const char*>(next + o), _MM_HINT_T0);
        if (j % kScaleRun == 0)
            for (size_t jj = j; jj < std::min(nb, j + kScaleRun); jj++)
#pragma GCC unroll 4
                for (int s = 0; s < S; s++)
                    _mm512_store_ps(scales[jj - j][s], scales16(row0 + size_t(s) * 16 * stride,
                                                                jj * kBlock, row_offsets));
        __m512 scale[S];
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) {
            decode_block16(row0 + size_t(s) * 16 * stride, stride, j * kBlock, perm, codes[s]);
            scale[s] = _mm512_load_ps(scales[j % kScaleRun][s]);
        }
        const float* ak = a + j * 32;
#pragma GCC unroll 4
        for (int i = 0; i < 32; i++) {
            __m512 v[S];
#pragma GCC unroll 4
            for (int s = 0; s < S; s++) {
                const __m128i q = _mm_load_si128(reinterpret_cast<const __m128i*>(codes[s][i]));
                v[s] = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), scale[s]);
            }
#pragma GCC unroll 4
            for (int m = 0; m < MM; m++) {
                const __m512 av = _mm512_set1_ps(ak[m * lda + i]);
#pragma GCC unroll 4
                for (int s = 0; s < S; s++) acc[m][s] = _mm512_fmadd_ps(av, v[s], acc[m][s]);
            }
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < MM; m++)
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) _mm512_storeu_ps(c + (m * S + s) * 16, acc[m][s]);
}

// Whole groups of S * 16 columns of acc, from column 0; returns the columns done.
template <int MM, int S>
JAL_AVX512 uint32_t direct_mxfp4_groups(const Tile& acc, const ConstTile& b, const float* a)
{
    constexpr uint32_t W = 16 * S;
    const size_t K = b.cols, nb = K / 32;
    const uint32_t done = acc.cols / W * W;
    const size_t group_bytes = (W - 1) * size_t{b.stride} + nb * kBlock;
    // The first group's rows, all at once: their misses then overlap rather than come a
    // block at a time (each later group's were prefetched while the one before ran).
    if (done != 0)
        for (size_t o = 0; o < group_bytes; o += 64)
            _mm_prefetch(reinterpret_cast<const char*>(tile_at(b, 0, 0) + o), _MM_HINT_T0);
    for (uint32_t n0 = 0; n0 < done; n0 += W) {
        alignas(64) float c[MM * W];
        for (int m = 0; m < MM; m++)
            std::memcpy(c + m * W, acc_row(acc, m) + size_t(n0) * 4, size_t(W) * 4);
        // The next group's rows (none after the last: b's bytes end there).
        const bool more = n0 + W < done;
        direct_mxfp4_16<MM, S>(a, K, tile_at(b, n0, 0), b.stride, nb, c,
                               more ? tile_at(b, n0 + W, 0) : nullptr, more ? group_bytes : 0);
        for (int m = 0; m < MM; m++)
            std::memcpy(acc_row(acc, m) + size_t(n0) * 4, c + m * W, size_t(W) * 4);
    }
    return done;
}

}  // namespace

uint32_t mxfp4_gemv_avx512(const Tile& acc, const ConstTile& b, const float* a)
{
    // The row offsets of a group's scale gather are 32-bit.
    if (b.stride > (1u << 26)) return 0;
    switch (acc.rows) {
    case 1:
        return direct_mxfp4_groups<1, 4>(acc, b, a);
    case 2:
        return direct_mxfp4_groups<2, 2>(acc, b, a);
    case 3:
        return direct_mxfp4_groups<3, 2>(acc, b, a);
    default:
        return direct_mxfp4_groups<4, 2>(acc, b, a);
    }
}

}  // namespace jal::numerics

#pragma GCC diagnostic pop

#else  // not x86-64: the AVX2 (there: scalar) kernel takes every column

namespace jal::numerics {
uint32_t mxfp4_gemv_avx512(const Tile&, const ConstTile&, const float*)
{
    return 0;
}
}  // namespace jal::numerics

#endif
