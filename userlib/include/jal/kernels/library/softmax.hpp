// softmax.hpp: softmax over rows of F32, with an optional sink logit per row group that
// joins only the denominator (llama.cpp's ggml_soft_max_ext + ggml_soft_max_add_sinks):
//
//   z = x * scale;  m = max(max_c z[c], sink);  y[c] = exp(z[c] - m) / (sum_c exp(z[c] - m) + exp(sink - m))
//
// Row r uses sink[(r / rows_per_sink) % n_sinks]: with rows laid out token-major with one
// row per head (row = token * n_head + head) pass rows_per_sink = 1, n_sinks = n_head;
// head-major (row = head * n_tokens + token): rows_per_sink = n_tokens, n_sinks = n_head.
// A row of -inf without a sink has no softmax (NaN), as in ggml.
//
// Slice s of n works on rows [s*ceil(rows/n), (s+1)*ceil(rows/n)) of x and out and reads
// the sinks it needs (place them replicated).
#pragma once

#include <cstdint>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/tensor.hpp>

namespace jal::kernels {

struct JAL_API SoftmaxConfig {
    uint32_t cols = 0;
    float scale = 1.0f;  // applied to x before the softmax
    bool sinks = false;
    uint32_t block_rows = 0;  // 0 = as many as fit (<= 64)
    uint32_t rows_per_block() const;
};

// Arguments, in order: x (address), x_stride, out (address; may equal x), out_stride,
// rows, sinks (address of F32; read only when config.sinks), rows_per_sink, n_sinks.
JAL_API CodeObject build_softmax(const SoftmaxConfig& config);

// Argument words for x and out (rows x cols F32) and, with config.sinks, the sink logits
// (F32, rows * cols of them count) and the rows that share one sink.
JAL_API std::vector<uint64_t> softmax_args(const SoftmaxConfig& config, const TensorRef& x,
                                           const TensorRef& out, const TensorRef& sinks = {},
                                           uint32_t rows_per_sink = 1);

// Runs build_softmax(config)'s program. Throws jal::Error on a bad
// tensor (as softmax_args) or a failed dispatch (Launcher::run).
JAL_API jal_dispatch_report softmax(Launcher& launcher, const Program& program,
                                    const SoftmaxConfig& config, const TensorRef& x,
                                    const TensorRef& out, const TensorRef& sinks = {},
                                    uint32_t rows_per_sink = 1,
                                    const DispatchOptions& options = {});

}  // namespace jal::kernels
