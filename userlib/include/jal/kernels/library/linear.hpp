// linear.hpp: the linear-algebra half of the kernel library (docs/kernels.md).
//
//   gemm.hpp         y = x × Wᵀ (+ bias): GEMV (decode) and GEMM (prefill), every weight format
//   expert_gemm.hpp  the same for mixture-of-experts: each (token, selected expert) pair
//   embedding.hpp    rows of a table by token id, dequantized to F32
//   argmax.hpp       index of each row's largest logit
//   collective.hpp   ring all-reduce of F32 vectors across the dispatch's slices
//   quantize.hpp     F32 activations to Q8_0 / MXFP8 / MXFP4 (a separate pass)
//
// What they share is here: the numerics modes and how work is split across slices. Slices
// are the unit of parallelism; each kernel documents which rows each slice owns, so callers
// can place that data in the slice's local HBM. Weights are passed as a shard table: one
// device address per dispatch slice, of the first row that slice owns (shard_table()), so a
// weight may be one allocation or one allocation per slice (JAL_PLACE_SLICE) alike.
#pragma once

#include <cstdint>
#include <vector>

#include <jal/api.h>
#include <jal/hw/isa.h>
#include <jal/kernels/library/tensor.hpp>

namespace jal::kernels::linear {

// How activations meet the weights in the matrix engine.
enum class Numerics {
    native,  // activations stay F32: the matrix engine decodes the weight format exactly
    ggml,    // as llama.cpp's CPU backend: activations rounded to Q8_0 before MXFP4 and Q8_0
             // (BF16 before BF16, F16 before F16) dot products; F32 and MXFP8 weights as native
    fast,    // activations converted to the weight's own format (MXFP4×MXFP4, MXFP8×MXFP8,
             // BF16×BF16, F16×F16): the matrix engine's full rate for that format
};
// Q8_0 weights meet Q8_0 activations in every mode: the matrix engine multiplies Q8_0 only
// by Q8_0.
JAL_API const char* numerics_name(Numerics n);

// The activation format the matrix engine sees for weights `weight` under `numerics`, and
// the rounding VCVT uses to get there.
JAL_API jal_dtype activation_dtype(jal_dtype weight, Numerics numerics);
JAL_API jal_cvt_mode activation_cvt_mode(Numerics numerics);

// Whether the GEMM kernel (gemm.hpp) takes weights of this format: MXFP4, MXFP8 E4M3, BF16,
// F16, Q8_0 or F32.
JAL_API bool weight_dtype_supported(jal_dtype weight);

// A half-open range of rows (or columns, experts, tokens).
struct Range {
    uint32_t begin = 0;
    uint32_t end = 0;
    uint32_t size() const { return end - begin; }
};

// The split every kernel here uses: `total` items in contiguous chunks of
// ceil(total / slices); slice s owns [s·chunk, min((s+1)·chunk, total)) (possibly empty).
JAL_API Range slice_range(uint32_t total, uint32_t slices, uint32_t slice);

// Shard table of a tensor that is one allocation: entry s is the address of the first row
// slice s owns (slice_range(t.rows, slices, s)).
JAL_API std::vector<uint64_t> shard_table(const TensorRef& t, uint32_t slices);

// Bytes of one packed row of `cols` elements of `dtype`.
JAL_API uint64_t packed_row_bytes(jal_dtype dtype, uint32_t cols);

// Row stride of a tensor (its packed row size when row_stride is 0).
JAL_API uint64_t stride_of(const TensorRef& t);

}  // namespace jal::kernels::linear
