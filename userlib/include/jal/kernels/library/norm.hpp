// norm.hpp: RMSNorm over rows of F32 (GPT-OSS's attn_norm, attn_post_norm, output_norm).
//
//   y[r][c] = x[r][c] / sqrt(mean_c(x[r][c]^2) + eps) * w[c]
//
// as llama.cpp's ggml_rms_norm followed by ggml_mul with the weight. Slice s of n works on
// rows [s*ceil(rows/n), (s+1)*ceil(rows/n)); each slice reads the whole weight (place it
// replicated) and its own rows of x and out.
#pragma once

#include <cstdint>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/tensor.hpp>

namespace jal::kernels {

struct JAL_API RmsNormConfig {
    uint32_t cols = 0;        // elements a row (n_embd)
    float eps = 1e-5f;        // GPT-OSS: 1e-5
    uint32_t block_rows = 0;  // rows a slice holds in L1 at once; 0 = as many as fit (<= 64)
    // The rows written: F32, or BF16 rounded as out_mode (the VCVT a GEMM that fuses the norm
    // applies to its normalised rows: the same bits, written once for every reader).
    jal_dtype out = JAL_DT_F32;
    jal_cvt_mode out_mode = JAL_CVT_OCP;
    uint32_t rows_per_block() const;
};

// Arguments, in order: x (address), x_stride (bytes), weight (address, cols F32),
// out (address; may equal x when out is F32), out_stride (bytes), rows.
JAL_API CodeObject build_rms_norm(const RmsNormConfig& config);

// The kernel's argument words for x (rows x cols F32), weight (1 x cols F32) and out (at
// least x.rows rows of config.out); throws jal::Error(INVALID_FIELD) on a shape the kernel cannot take.
JAL_API std::vector<uint64_t> rms_norm_args(const RmsNormConfig& config, const TensorRef& x,
                                            const TensorRef& weight, const TensorRef& out);

// Runs build_rms_norm(config)'s program on x, weight and out. Throws jal::Error on a bad
// tensor (as rms_norm_args) or a failed dispatch (Launcher::run).
JAL_API jal_dispatch_report rms_norm(Launcher& launcher, const Program& program,
                                     const RmsNormConfig& config, const TensorRef& x,
                                     const TensorRef& weight, const TensorRef& out,
                                     const DispatchOptions& options = {});

}  // namespace jal::kernels
