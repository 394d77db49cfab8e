// swiglu.hpp: GPT-OSS's gated activation (llama.cpp's ggml_swiglu_oai, LLM_FFN_SWIGLU_OAI_MOE):
//
//   g' = min(g, limit);  u' = clamp(u, -limit, limit);  out = g' * sigmoid(alpha * g') * (u' + 1)
//
// with limit 7 and alpha 1.702 for GPT-OSS. Gate and up are separate row-major tensors as
// llama.cpp's GGUF has them (ffn_gate_exps and ffn_up_exps are separate weights, so their
// outputs are separate rows); ggml's fused form (gate in the first half of a row, up in the
// second) is the same call with up = gate + n_ff * 4 and equal strides. (Hugging Face's
// checkpoint interleaves gate and up columns; the GGUF converter splits them.)
//
// With oai = false the same kernel is ggml_swiglu, out = g · sigmoid(g) · u (VSILU).
//
// Slice s of n works on rows [s*ceil(rows/n), (s+1)*ceil(rows/n)) of gate, up and out.
#pragma once

#include <cstdint>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/tensor.hpp>

namespace jal::kernels {

struct JAL_API SwigluConfig {
    uint32_t cols = 0;  // n_ff
    float alpha = 1.702f;
    float limit = 7.0f;
    // false: the plain SwiGLU of LLaMA and DeepSeek (ggml_swiglu, LLM_FFN_SILU + PAR):
    // out = silu(g) · u, alpha and limit unused.
    bool oai = true;
    uint32_t block_rows = 0;  // 0 = as many as fit (<= 64)
    uint32_t rows_per_block() const;
};

// Arguments, in order: gate (address), gate_stride, up (address), up_stride, out (address;
// may equal gate), out_stride, rows.
JAL_API CodeObject build_swiglu_oai(const SwigluConfig& config);

// Argument words for gate, up and out (rows x cols F32 each; rows from gate).
JAL_API std::vector<uint64_t> swiglu_oai_args(const SwigluConfig& config, const TensorRef& gate,
                                              const TensorRef& up, const TensorRef& out);

// Runs build_swiglu_oai(config)'s program. Throws jal::Error on a bad
// tensor (as swiglu_oai_args) or a failed dispatch (Launcher::run).
JAL_API jal_dispatch_report swiglu_oai(Launcher& launcher, const Program& program,
                                       const SwigluConfig& config, const TensorRef& gate,
                                       const TensorRef& up, const TensorRef& out,
                                       const DispatchOptions& options = {});

}  // namespace jal::kernels
