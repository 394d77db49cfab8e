// Internal: the kernels behind tile_math.hpp, per code path. Callers have validated the
// tiles (mma.cpp); these only compute.
#pragma once

#include <jal/isa/tile_math.hpp>

#include <cstddef>

namespace jal::numerics {

// Case (a) of MMA: a Q8_0, b MXFP4 or Q8_0 (per-block integer dots, scaled, added).
void mma_blockdot_scalar(const Tile& acc, const ConstTile& a, const ConstTile& b);
void mma_blockdot_avx2(const Tile& acc, const ConstTile& a, const ConstTile& b);
// Case (b): everything decoded to F32, sequential fused multiply-add along k.
void mma_fma_scalar(const Tile& acc, const ConstTile& a, const ConstTile& b);
void mma_fma_avx2(const Tile& acc, const ConstTile& a, const ConstTile& b);
// Case (b) with one to four rows of a and an F32, BF16 or F16 b (mma_avx2_gemv.cpp);
// false, having done nothing, for any other shape or format.
bool mma_fma_gemv_avx2(const Tile& acc, const ConstTile& a, const ConstTile& b);
// Case (b) with one to four rows of a, already decoded to F32 (acc.rows x b.cols floats),
// and an MXFP4 b, with AVX-512 (mma_avx512_gemv.cpp): the columns [0, returned) of acc, in
// whole groups of 32 or 64; the AVX2 kernel takes the rest.
uint32_t mxfp4_gemv_avx512(const Tile& acc, const ConstTile& b, const float* a);
// Case (b) with sixteen or more rows of an F32 a and one to four columns of acc, with
// AVX-512 (mma_avx512_columns.cpp); false, having done nothing, for any other shape.
bool mma_fma_columns_avx512(const Tile& acc, const ConstTile& a, const ConstTile& b);

// MMA with a K-major b (K rows of N; F32, BF16 or F16), case (b)'s arithmetic
// (mma_kmajor.cpp): plain scalar code, and the vector kernels (AVX2, AVX-512), which give
// the same bits.
void mma_kmajor_scalar(const Tile& acc, const ConstTile& a, const ConstTile& b);
void mma_kmajor_avx2(const Tile& acc, const ConstTile& a, const ConstTile& b);
void mma_kmajor_avx512(const Tile& acc, const ConstTile& a, const ConstTile& b);

// The vector engine's functions on n floats (x and y may alias).
void exp_scalar(const float* x, float* y, size_t n);
void exp_avx2(const float* x, float* y, size_t n);
void sigmoid_scalar(const float* x, float* y, size_t n);
void sigmoid_avx2(const float* x, float* y, size_t n);
void silu_scalar(const float* x, float* y, size_t n);
void silu_avx2(const float* x, float* y, size_t n);

// Pointer to row r of a tile, and to the element-block holding column k (k a multiple of
// the dtype's block). Row starts (k = 0), which the GEMVs ask for once a row of b a strip,
// cost no call.
inline const unsigned char* tile_at(const ConstTile& t, size_t r, size_t k)
{
    return static_cast<const unsigned char*>(t.data) + r * t.stride +
           (k ? row_bytes(t.dtype, k) : 0);
}
inline unsigned char* acc_row(const Tile& t, size_t r)
{
    return static_cast<unsigned char*>(t.data) + r * t.stride;
}

}  // namespace jal::numerics
