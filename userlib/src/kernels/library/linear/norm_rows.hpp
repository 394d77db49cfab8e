// The RMS norm of rows already in L1, y = x / sqrt(mean(x²) + eps) · w (llama.cpp's
// ggml_rms_norm then ggml_mul): one instruction sequence shared by the rms_norm kernel and
// the GEMMs that fuse the norm into their activation load, so both give the same bits.
#pragma once

#include <cstdint>

#include <jal/kernels/builder.hpp>

namespace jal::kernels::linear::detail {

// x (F32, rows × cols) normalised into y (y may be x, or sq: x is then left as it was, for a
// store still reading it); sq (rows × cols) and scale (rows × 1) are F32 scratch tiles of the
// same rows; w is the 1 × cols F32 weight.
inline void emit_rms_norm_rows_into(Builder& b, T y, T x, T sq, T scale, T w, uint32_t cols,
                                    float eps)
{
    b.vmul(sq, x, x);
    b.vredsum(scale, sq);
    b.vscale(scale, scale, 1.0f / static_cast<float>(cols));
    b.vadds(scale, scale, eps);
    b.vrsqrt(scale, scale);
    b.vmul(y, x, scale);  // column broadcast: each row by its own scale
    b.vmul(y, y, w);      // row broadcast: the weight down every row
}

// x normalised in place.
inline void emit_rms_norm_rows(Builder& b, T x, T sq, T scale, T w, uint32_t cols, float eps)
{
    emit_rms_norm_rows_into(b, x, x, sq, scale, w, cols, eps);
}

}  // namespace jal::kernels::linear::detail
