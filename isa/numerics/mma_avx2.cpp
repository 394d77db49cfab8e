// MMA with AVX2+FMA+F16C: the same results as mma.cpp's scalar code, bit for bit.
//
// Case (b), sequential fma along k: sgemm's structure. b is decoded, KC columns of k and
// PW rows at a time, into a K-major F32 panel (panel[k][n]); a register-blocked kernel
// keeps an MR x NV*8 block of acc in registers and, for each k in order, broadcasts
// a[m][k] and fuses it with the panel row. Every output sees fma(a[m][k], b[n][k], acc)
// for k = 0, 1, ... exactly as in the scalar loop; blocking only changes when the
// accumulator visits memory between k-chunks.
//
// Case (a), Q8_0 x MXFP4: 32-element integer dots with maddubs (b's codes as kvalues + 12,
// unsigned, so no sign trick is needed; the 12 * sum(a) is taken off again), eight outputs
// reduced together, then the per-block float steps (d = scale_b * scale_a, t = d * isum,
// acc + t) in block order, eight outputs per vector.
#include <jal/isa/tile_math.hpp>

#include "avx2.hpp"
#include "bits.hpp"
#include "kernels.hpp"
#include "scratch.hpp"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__)

namespace jal::numerics {

namespace {

constexpr int KC = 256;  // k per panel (multiple of 32 and 8)
constexpr int PW = 64;   // rows of b (columns of acc) per panel
constexpr int MR = 6;    // rows of a per register block

constexpr int8_t kValuesMxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

// e8m0_to_f32_half for every code, so the kernels look scales up instead of computing them.
struct HalfScales {
    float v[256];
    HalfScales()
    {
        for (int e = 0; e < 256; e++) v[e] = e8m0_to_f32_half(uint8_t(e));
    }
};
const float* half_scales()
{
    static const HalfScales t;
    return t.v;
}

// ---- case (b) ----

// Decodes k-columns [k0, k0 + kc) of b's rows [n0, n0 + nr) into rows[r * KC + k];
// rows nr..PW-1 become zero.
JAL_AVX2 void decode_b_rows(const ConstTile& b, uint32_t n0, int nr, uint32_t k0, int kc,
                            float* rows)
{
    for (int r = 0; r < nr; r++) {
        const unsigned char* src = tile_at(b, n0 + r, k0);
        float* dst = rows + size_t(r) * KC;
        switch (b.dtype) {
        case JAL_DT_F32:
            std::memcpy(dst, src, size_t(kc) * 4);
            break;
        case JAL_DT_BF16: {
            int k = 0;
            for (; k + 8 <= kc; k += 8) {
                __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * k));
                __m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);
                _mm256_storeu_ps(dst + k, _mm256_castsi256_ps(w));
            }
            for (; k < kc; k++) {
                uint16_t h;
                std::memcpy(&h, src + 2 * k, 2);
                dst[k] = bf16_to_f32(h);
            }
            break;
        }
        case JAL_DT_F16: {
            int k = 0;
            for (; k + 8 <= kc; k += 8)
                _mm256_storeu_ps(dst + k, _mm256_cvtph_ps(_mm_loadu_si128(
                                              reinterpret_cast<const __m128i*>(src + 2 * k))));
            for (; k < kc; k++) {
                uint16_t h;
                std::memcpy(&h, src + 2 * k, 2);
                dst[k] = f16_to_f32(h);
            }
            break;
        }
        case JAL_DT_MXFP4: {
            const __m128i kv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kValuesMxfp4));
            const __m128i m4 = _mm_set1_epi8(0x0f);
            for (int j = 0; j < kc / 32; j++) {
                const unsigned char* blk = src + size_t(j) * sizeof(jal_block_mxfp4);
                const __m256 d = _mm256_set1_ps(half_scales()[blk[0]]);
                __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 1));
                __m128i lo = _mm_shuffle_epi8(kv, _mm_and_si128(q, m4));
                __m128i hi = _mm_shuffle_epi8(kv, _mm_and_si128(_mm_srli_epi16(q, 4), m4));
                float* o = dst + 32 * j;
                _mm256_storeu_ps(o + 0,
                                 _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(lo)), d));
                _mm256_storeu_ps(
                    o + 8, _mm256_mul_ps(
                               _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(lo, 8))), d));
                _mm256_storeu_ps(o + 16,
                                 _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(hi)), d));
                _mm256_storeu_ps(
                    o + 24,
                    _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(hi, 8))),
                                  d));
            }
            break;
        }
        default:  // MXFP8 (and anything else): the row decoder; exact either way
            dequantize_row(b.dtype, src, dst, size_t(kc));
            break;
        }
    }
    for (int r = nr; r < PW; r++) std::memset(rows + size_t(r) * KC, 0, KC * sizeof(float));
}

// rows[PW][KC] -> panel[KC][PW] for k < kc (rounded up to 8; the rest is never read).
JAL_AVX2 void transpose_to_panel(const float* rows, int kc, float* panel)
{
    for (int k = 0; k < kc; k += 8) {
        for (int r = 0; r < PW; r += 8) {
            const float* s = rows + size_t(r) * KC + k;
            __m256 v0 = _mm256_loadu_ps(s + 0 * KC), v1 = _mm256_loadu_ps(s + 1 * KC);
            __m256 v2 = _mm256_loadu_ps(s + 2 * KC), v3 = _mm256_loadu_ps(s + 3 * KC);
            __m256 v4 = _mm256_loadu_ps(s + 4 * KC), v5 = _mm256_loadu_ps(s + 5 * KC);
            __m256 v6 = _mm256_loadu_ps(s + 6 * KC), v7 = _mm256_loadu_ps(s + 7 * KC);
            transpose8(v0, v1, v2, v3, v4, v5, v6, v7);
            float* d = panel + size_t(k) * PW + r;
            _mm256_storeu_ps(d + 0 * PW, v0);
            _mm256_storeu_ps(d + 1 * PW, v1);
            _mm256_storeu_ps(d + 2 * PW, v2);
            _mm256_storeu_ps(d + 3 * PW, v3);
            _mm256_storeu_ps(d + 4 * PW, v4);
            _mm256_storeu_ps(d + 5 * PW, v5);
            _mm256_storeu_ps(d + 6 * PW, v6);
            _mm256_storeu_ps(d + 7 * PW, v7);
        }
    }
}

// c[R][NV*8] (row stride PW) = fma chains over k of a[r][k] (row stride KC) and panel[k][0..NV*8).
template <int R, int NV>
JAL_AVX2 void kernel(const float* a, const float* panel, int kc, float* c)
{
    __m256 acc[R][NV];
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++) acc[r][v] = _mm256_loadu_ps(c + r * PW + 8 * v);
    for (int k = 0; k < kc; k++) {
        __m256 p[NV];
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++) p[v] = _mm256_loadu_ps(panel + size_t(k) * PW + 8 * v);
#pragma GCC unroll 6
        for (int r = 0; r < R; r++) {
            __m256 av = _mm256_broadcast_ss(a + size_t(r) * KC + k);
#pragma GCC unroll 8
            for (int v = 0; v < NV; v++) acc[r][v] = _mm256_fmadd_ps(av, p[v], acc[r][v]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < R; r++)
#pragma GCC unroll 8
        for (int v = 0; v < NV; v++) _mm256_storeu_ps(c + r * PW + 8 * v, acc[r][v]);
}

// One block of rows (rows <= MR) against the whole panel: c[rows][PW].
template <int R, int NV>
JAL_AVX2 void kernel_panel(const float* a, const float* panel, int kc, float* c)
{
    for (int col = 0; col < PW; col += 8 * NV) kernel<R, NV>(a, panel + col, kc, c + col);
}

JAL_AVX2 void rows_times_panel(int rows, const float* a, const float* panel, int kc, float* c)
{
    switch (rows) {
    case 6:
        kernel_panel<6, 2>(a, panel, kc, c);
        break;
    case 5:
        kernel_panel<5, 2>(a, panel, kc, c);
        break;
    case 4:
        kernel_panel<4, 2>(a, panel, kc, c);
        break;
    case 3:
        kernel_panel<3, 4>(a, panel, kc, c);
        break;
    case 2:
        kernel_panel<2, 4>(a, panel, kc, c);
        break;
    case 1:
        kernel_panel<1, 8>(a, panel, kc, c);
        break;
    }
}

// Small M (decode GEMV) with MXFP4 b: no panel. For each block, the 16 code bytes of 8
// rows of b are transposed as bytes (so the 8 rows of one k sit together), looked up as
// ggml's doubled integer values, and then, for k in order, widened, scaled (exactly) and
// fused into 8-row accumulators; S strips of 8 rows run side by side for independent
// chains. The per-output operation sequence is the same as everywhere else.
template <int MM, int S>
JAL_AVX2 void direct_mxfp4(const float* a, size_t lda, const unsigned char* const* rows, size_t nb,
                           float* c)
{
    const float* hs = half_scales();
    const __m128i kv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(kValuesMxfp4));
    const __m128i m4 = _mm_set1_epi8(0x0f);
    __m256 acc[MM][S];
#pragma GCC unroll 4
    for (int m = 0; m < MM; m++)
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) acc[m][s] = _mm256_loadu_ps(c + m * S * 8 + s * 8);
    alignas(32) int8_t codes[S][32][8];
    for (size_t j = 0; j < nb; j++) {
        __m256 scale[S];
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) {
            const unsigned char* const* rp = rows + s * 8;
            const size_t off = j * sizeof(jal_block_mxfp4);
            __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[0] + off + 1));
            __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[1] + off + 1));
            __m128i r2 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[2] + off + 1));
            __m128i r3 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[3] + off + 1));
            __m128i r4 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[4] + off + 1));
            __m128i r5 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[5] + off + 1));
            __m128i r6 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[6] + off + 1));
            __m128i r7 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(rp[7] + off + 1));
            __m128i a0 = _mm_unpacklo_epi8(r0, r1), a1 = _mm_unpackhi_epi8(r0, r1);
            __m128i a2 = _mm_unpacklo_epi8(r2, r3), a3 = _mm_unpackhi_epi8(r2, r3);
            __m128i a4 = _mm_unpacklo_epi8(r4, r5), a5 = _mm_unpackhi_epi8(r4, r5);
            __m128i a6 = _mm_unpacklo_epi8(r6, r7), a7 = _mm_unpackhi_epi8(r6, r7);
            __m128i b0 = _mm_unpacklo_epi16(a0, a2), b1 = _mm_unpackhi_epi16(a0, a2);
            __m128i b2 = _mm_unpacklo_epi16(a1, a3), b3 = _mm_unpackhi_epi16(a1, a3);
            __m128i b4 = _mm_unpacklo_epi16(a4, a6), b5 = _mm_unpackhi_epi16(a4, a6);
            __m128i b6 = _mm_unpacklo_epi16(a5, a7), b7 = _mm_unpackhi_epi16(a5, a7);
            // t[p]: byte 2p of rows 0..7, then byte 2p+1 of rows 0..7
            __m128i t[8] = {_mm_unpacklo_epi32(b0, b4), _mm_unpackhi_epi32(b0, b4),
                            _mm_unpacklo_epi32(b1, b5), _mm_unpackhi_epi32(b1, b5),
                            _mm_unpacklo_epi32(b2, b6), _mm_unpackhi_epi32(b2, b6),
                            _mm_unpacklo_epi32(b3, b7), _mm_unpackhi_epi32(b3, b7)};
#pragma GCC unroll 8
            for (int p = 0; p < 8; p++) {
                _mm_store_si128(reinterpret_cast<__m128i*>(&codes[s][2 * p][0]),
                                _mm_shuffle_epi8(kv, _mm_and_si128(t[p], m4)));
                _mm_store_si128(reinterpret_cast<__m128i*>(&codes[s][16 + 2 * p][0]),
                                _mm_shuffle_epi8(kv, _mm_and_si128(_mm_srli_epi16(t[p], 4), m4)));
            }
            scale[s] =
                _mm256_setr_ps(hs[rp[0][off]], hs[rp[1][off]], hs[rp[2][off]], hs[rp[3][off]],
                               hs[rp[4][off]], hs[rp[5][off]], hs[rp[6][off]], hs[rp[7][off]]);
        }
        const float* ak = a + j * 32;
#pragma GCC unroll 4
        for (int i = 0; i < 32; i++) {
            __m256 v[S];
#pragma GCC unroll 4
            for (int s = 0; s < S; s++) {
                __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(&codes[s][i][0]));
                v[s] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), scale[s]);
            }
#pragma GCC unroll 4
            for (int m = 0; m < MM; m++) {
                __m256 av = _mm256_broadcast_ss(ak + m * lda + i);
#pragma GCC unroll 4
                for (int s = 0; s < S; s++) acc[m][s] = _mm256_fmadd_ps(av, v[s], acc[m][s]);
            }
        }
    }
#pragma GCC unroll 4
    for (int m = 0; m < MM; m++)
#pragma GCC unroll 4
        for (int s = 0; s < S; s++) _mm256_storeu_ps(c + m * S * 8 + s * 8, acc[m][s]);
}

// Columns [first, N) of acc.
template <int MM, int S>
JAL_AVX2 void direct_mxfp4_run(const Tile& acc, const ConstTile& b, const float* a,
                               const unsigned char* zero_row, uint32_t first)
{
    const uint32_t N = acc.cols;
    const size_t K = b.cols, nb = K / 32;
    constexpr int W = 8 * S;
    for (uint32_t n0 = first; n0 < N; n0 += W) {
        const int nw = int(std::min<uint32_t>(W, N - n0));
        const unsigned char* rows[W];
        for (int r = 0; r < W; r++) rows[r] = r < nw ? tile_at(b, n0 + r, 0) : zero_row;
        float c[MM * W];
        for (int m = 0; m < MM; m++)
            std::memcpy(c + m * W, acc_row(acc, m) + size_t(n0) * 4, size_t(nw) * 4);
        direct_mxfp4<MM, S>(a, K, rows, nb, c);
        for (int m = 0; m < MM; m++)
            std::memcpy(acc_row(acc, m) + size_t(n0) * 4, c + m * W, size_t(nw) * 4);
    }
}

struct FmaBuffers {
    std::vector<float> a;      // M x KC
    std::vector<float> rows;   // PW x KC
    std::vector<float> panel;  // KC x PW
    std::vector<float> c;      // MR x PW
};

JAL_AVX2 void mma_fma_run(const Tile& acc, const ConstTile& a, const ConstTile& b, FmaBuffers& buf)
{
    const uint32_t M = acc.rows, N = acc.cols, K = a.cols;
    for (uint32_t k0 = 0; k0 < K; k0 += KC) {
        const int kc = int(std::min<uint32_t>(KC, K - k0));
        for (uint32_t m = 0; m < M; m++)
            dequantize_row(a.dtype, tile_at(a, m, k0), buf.a.data() + size_t(m) * KC, size_t(kc));
        for (uint32_t n0 = 0; n0 < N; n0 += PW) {
            const int nw = int(std::min<uint32_t>(PW, N - n0));
            decode_b_rows(b, n0, nw, k0, kc, buf.rows.data());
            transpose_to_panel(buf.rows.data(), kc, buf.panel.data());
            for (uint32_t m0 = 0; m0 < M; m0 += MR) {
                const int mr = int(std::min<uint32_t>(MR, M - m0));
                float* c = buf.c.data();
                for (int r = 0; r < mr; r++)
                    std::memcpy(c + r * PW, acc_row(acc, m0 + r) + size_t(n0) * 4, size_t(nw) * 4);
                rows_times_panel(mr, buf.a.data() + size_t(m0) * KC, buf.panel.data(), kc, c);
                for (int r = 0; r < mr; r++)
                    std::memcpy(acc_row(acc, m0 + r) + size_t(n0) * 4, c + r * PW, size_t(nw) * 4);
            }
        }
    }
}

// ---- case (a) ----

struct BlockdotBuffers {
    std::vector<uint8_t> bq;  // nb x 8 rows x 32 bytes (MXFP4: kvalue + 12) or int16 (Q8_0)
    std::vector<int16_t> bq16;
    std::vector<float> bscale;  // nb x 8
    std::vector<float> ascale;  // M x nb
    std::vector<int32_t> asum;  // M x nb: sum of a's int8 in the block
};

// Sums of eight 8-lane vectors, one per lane.
JAL_AVX2 inline __m256i reduce8(__m256i v0, __m256i v1, __m256i v2, __m256i v3, __m256i v4,
                                __m256i v5, __m256i v6, __m256i v7)
{
    __m256i h0 = _mm256_hadd_epi32(v0, v1), h1 = _mm256_hadd_epi32(v2, v3);
    __m256i h2 = _mm256_hadd_epi32(v4, v5), h3 = _mm256_hadd_epi32(v6, v7);
    __m256i g0 = _mm256_hadd_epi32(h0, h1), g1 = _mm256_hadd_epi32(h2, h3);
    return _mm256_add_epi32(_mm256_permute2x128_si256(g0, g1, 0x20),
                            _mm256_permute2x128_si256(g0, g1, 0x31));
}

// long-function: the MX block-dot kernel, kept whole so the compiler keeps its eight
// accumulators in registers across the unrolled loop.
JAL_AVX2 void mma_blockdot_run(const Tile& acc, const ConstTile& a, const ConstTile& b,
                               BlockdotBuffers& buf)
{
    const uint32_t M = acc.rows, N = acc.cols;
    const size_t nb = a.cols / 32;
    const bool mxfp4 = b.dtype == JAL_DT_MXFP4;
    for (uint32_t m = 0; m < M; m++) {
        for (size_t j = 0; j < nb; j++) {
            jal_block_q8_0 qa;
            std::memcpy(&qa, tile_at(a, m, 0) + j * sizeof qa, sizeof qa);
            int32_t s = 0;
            for (int i = 0; i < 32; i++) s += qa.qs[i];
            buf.asum[m * nb + j] = s;
            buf.ascale[m * nb + j] = f16_to_f32(qa.d);
        }
    }
    const __m128i kv12 = _mm_setr_epi8(12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0);
    const __m128i m4 = _mm_set1_epi8(0x0f);
    const __m256i ones = _mm256_set1_epi16(1);
    for (uint32_t n0 = 0; n0 < N; n0 += 8) {
        const int nr = int(std::min<uint32_t>(8, N - n0));
        // the strip's b rows, block-major: bq[(j * 8 + r) * 32 + i]
        const float* hs = half_scales();
        for (int r = 0; r < 8; r++) {
            if (r >= nr) {  // padding rows: code 0 / value 0, scale 0
                for (size_t j = 0; j < nb; j++) {
                    if (mxfp4)
                        std::memset(buf.bq.data() + (j * 8 + r) * 32, 12, 32);
                    else
                        std::memset(buf.bq16.data() + (j * 8 + r) * 32, 0, 64);
                    buf.bscale[j * 8 + r] = 0.0f;
                }
                continue;
            }
            const unsigned char* row = tile_at(b, n0 + r, 0);
            if (mxfp4) {
                for (size_t j = 0; j < nb; j++) {
                    const unsigned char* blk = row + j * sizeof(jal_block_mxfp4);
                    uint8_t* dst = buf.bq.data() + (j * 8 + r) * 32;
                    __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 1));
                    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst),
                                     _mm_shuffle_epi8(kv12, _mm_and_si128(q, m4)));
                    _mm_storeu_si128(
                        reinterpret_cast<__m128i*>(dst + 16),
                        _mm_shuffle_epi8(kv12, _mm_and_si128(_mm_srli_epi16(q, 4), m4)));
                    buf.bscale[j * 8 + r] = hs[blk[0]];
                }
            } else {
                for (size_t j = 0; j < nb; j++) {
                    const unsigned char* blk = row + j * sizeof(jal_block_q8_0);
                    int16_t* dst = buf.bq16.data() + (j * 8 + r) * 32;
                    __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
                    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                                        _mm256_cvtepi8_epi16(_mm256_castsi256_si128(q)));
                    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + 16),
                                        _mm256_cvtepi8_epi16(_mm256_extracti128_si256(q, 1)));
                    uint16_t d;
                    std::memcpy(&d, blk, 2);
                    buf.bscale[j * 8 + r] = f16_to_f32(d);
                }
            }
        }
        for (uint32_t m = 0; m < M; m++) {
            float cbuf[8] = {};
            unsigned char* out = acc_row(acc, m) + size_t(n0) * 4;
            std::memcpy(cbuf, out, size_t(nr) * 4);
            __m256 c = _mm256_loadu_ps(cbuf);
            const unsigned char* arow = tile_at(a, m, 0);
            for (size_t j = 0; j < nb; j++) {
                const __m256i av = _mm256_loadu_si256(
                    reinterpret_cast<const __m256i*>(arow + j * sizeof(jal_block_q8_0) + 2));
                __m256i v[8];
                if (mxfp4) {
                    const uint8_t* bj = buf.bq.data() + j * 256;
#pragma GCC unroll 8
                    for (int r = 0; r < 8; r++) {
                        __m256i bv =
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bj + 32 * r));
                        v[r] = _mm256_madd_epi16(_mm256_maddubs_epi16(bv, av), ones);
                    }
                } else {
                    const int16_t* bj = buf.bq16.data() + j * 256;
                    const __m256i a_lo = _mm256_cvtepi8_epi16(_mm256_castsi256_si128(av));
                    const __m256i a_hi = _mm256_cvtepi8_epi16(_mm256_extracti128_si256(av, 1));
#pragma GCC unroll 8
                    for (int r = 0; r < 8; r++) {
                        __m256i b_lo =
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bj + 32 * r));
                        __m256i b_hi =
                            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bj + 32 * r + 16));
                        v[r] = _mm256_add_epi32(_mm256_madd_epi16(b_lo, a_lo),
                                                _mm256_madd_epi16(b_hi, a_hi));
                    }
                }
                __m256i isum = reduce8(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7]);
                if (mxfp4)
                    isum = _mm256_sub_epi32(isum, _mm256_set1_epi32(12 * buf.asum[m * nb + j]));
                const __m256 d = _mm256_mul_ps(_mm256_loadu_ps(buf.bscale.data() + j * 8),
                                               _mm256_set1_ps(buf.ascale[m * nb + j]));
                const __m256 t = _mm256_mul_ps(d, _mm256_cvtepi32_ps(isum));
                c = _mm256_add_ps(c, t);
            }
            _mm256_storeu_ps(cbuf, c);
            std::memcpy(out, cbuf, size_t(nr) * 4);
        }
    }
}

}  // namespace

void mma_fma_avx2(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    if (b.dtype == JAL_DT_MXFP4 && acc.rows <= 4) {
        const size_t K = a.cols;
        thread_local std::vector<float> af_buf;
        thread_local std::vector<unsigned char> zero_buf;
        float* af = grown(af_buf, size_t(acc.rows) * K);
        for (uint32_t m = 0; m < acc.rows; m++)
            dequantize_row(a.dtype, tile_at(a, m, 0), af + size_t(m) * K, K);
        // Zeroed once: only ever read (the stand-in for rows past the tile's end).
        const size_t zr = row_bytes(JAL_DT_MXFP4, K);
        if (zero_buf.size() < zr) zero_buf.assign(zr, 0);
        const unsigned char* zero_row = zero_buf.data();
        // AVX-512 takes whole groups of 32 or 64 columns; AVX2 the rest.
        const uint32_t first = active_isa() == Isa::avx512 ? mxfp4_gemv_avx512(acc, b, af) : 0;
        switch (acc.rows) {
        case 1:
            direct_mxfp4_run<1, 4>(acc, b, af, zero_row, first);
            break;
        case 2:
            direct_mxfp4_run<2, 2>(acc, b, af, zero_row, first);
            break;
        case 3:
            direct_mxfp4_run<3, 2>(acc, b, af, zero_row, first);
            break;
        default:
            direct_mxfp4_run<4, 2>(acc, b, af, zero_row, first);
            break;
        }
        trimmed(af_buf);
        trimmed(zero_buf);
        return;
    }
    if (mma_fma_gemv_avx2(acc, a, b)) return;
    if (active_isa() == Isa::avx512 && mma_fma_columns_avx512(acc, a, b)) return;
    thread_local FmaBuffers buf;
    grown(buf.a, size_t(acc.rows) * KC);
    grown(buf.rows, size_t(PW) * KC);
    grown(buf.panel, size_t(KC) * PW);
    grown(buf.c, size_t(MR) * PW);
    mma_fma_run(acc, a, b, buf);
    trimmed(buf.a);  // M x KC: the only one that grows with the tile
}

void mma_blockdot_avx2(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    const size_t nb = a.cols / 32;
    thread_local BlockdotBuffers buf;
    if (b.dtype == JAL_DT_MXFP4)
        grown(buf.bq, nb * 8 * 32);
    else
        grown(buf.bq16, nb * 8 * 32);
    grown(buf.bscale, nb * 8);
    grown(buf.ascale, size_t(acc.rows) * nb);
    grown(buf.asum, size_t(acc.rows) * nb);
    mma_blockdot_run(acc, a, b, buf);
    trimmed(buf.bq);
    trimmed(buf.bq16);
    trimmed(buf.bscale);
    trimmed(buf.ascale);
    trimmed(buf.asum);
}

}  // namespace jal::numerics

#else  // not x86-64: the scalar code is the only path

namespace jal::numerics {
void mma_fma_avx2(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    mma_fma_scalar(acc, a, b);
}
void mma_blockdot_avx2(const Tile& acc, const ConstTile& a, const ConstTile& b)
{
    mma_blockdot_scalar(acc, a, b);
}
}  // namespace jal::numerics

#endif
