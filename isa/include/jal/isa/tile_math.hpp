// What the matrix and vector engines compute on tiles (docs/numerics.md): MMA and the
// elementwise transcendental functions. Results are bit-identical on every host and in
// both code paths (numerics.hpp, force_isa).
#pragma once

#include <jal/hw/isa.h>
#include <jal/hw/status.h>
#include <jal/isa/numerics.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace jal::numerics {

// A 2-D tile in memory: row-major, stride bytes from one row to the next. For the block
// formats (MXFP4, MXFP8, Q8_0) a row is cols/32 consecutive blocks.
struct ConstTile {
    const void* data;
    uint32_t rows, cols, stride;
    jal_dtype dtype;
};
struct Tile {
    void* data;
    uint32_t rows, cols, stride;
    jal_dtype dtype;
};

// acc (F32, M x N) += a (M x K) x b^T (b: N rows of K).
//  - a Q8_0 with b MXFP4 or Q8_0: per block, exact integer dot, scaled, added (ggml's
//    ggml_vec_dot_mxfp4_q8_0 / _q8_0_q8_0 order; docs/numerics.md);
//  - otherwise: elements decoded to F32 exactly, acc = fmaf(a[m][k], b[n][k], acc) for
//    k = 0..K-1 in order.
// Allowed a: F32, BF16, F16, MXFP8_E4M3/E5M2, MXFP4, Q8_0; b: F32, BF16, F16, MXFP8_*,
// MXFP4 (and Q8_0 with a Q8_0). Returns JAL_STATUS_INVALID_FIELD (message in *error when
// given) for dtypes or shapes that do not fit, and changes nothing then.
jal_status mma(const Tile& acc, const ConstTile& a, const ConstTile& b,
               std::string* error = nullptr);

// acc (F32, M x N) += a (M x K) x b with b K-major: K rows of N (ISA 1.4's
// JAL_MMA_B_KMAJOR), b F32, BF16 or F16, a any of mma's. acc = fmaf(a[m][k], b[k][n], acc)
// for k = 0..K-1 in order: the same bits as mma with b's transpose. The same checks and
// errors as mma.
jal_status mma_kmajor(const Tile& acc, const ConstTile& a, const ConstTile& b,
                      std::string* error = nullptr);

// Elementwise math on F32 arrays (x and y may be the same array). exp, silu and sigmoid
// are within 2 ulp of the exact value (docs/numerics.md); rsqrt and recip are correctly
// rounded compositions (1/sqrtf(x), 1/x).
void exp_f32(const float* x, float* y, size_t n);
void silu_f32(const float* x, float* y, size_t n);
void sigmoid_f32(const float* x, float* y, size_t n);
void rsqrt_f32(const float* x, float* y, size_t n);
void recip_f32(const float* x, float* y, size_t n);

}  // namespace jal::numerics
