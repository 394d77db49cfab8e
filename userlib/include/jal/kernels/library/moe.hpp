// moe.hpp: GPT-OSS's expert routing and the weighted sum of the selected experts' outputs
// (llama.cpp's build_moe_ffn with LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT, norm_w off):
//
//   ids[t]     = the k experts with the largest router logits (bias already added by the
//                router GEMV), largest first, the lower expert id first on ties (VTOPK);
//   weights[t] = softmax over those k logits (no other renormalisation);
//   out[t]     = sum_j weights[t][j] * expert_out[t*k + j]   (j = 0..k-1, in that order)
//
// ggml selects with std::sort, whose order among equal logits is unspecified: on a tie
// that straddles the k-th place llama.cpp may pick either expert (their weights are equal).
//
// Both kernels split tokens: slice s of n works on tokens [s*ceil(rows/n), (s+1)*ceil(rows/n))
// and reads and writes only those tokens' rows.
#pragma once

#include <cstdint>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/tensor.hpp>

namespace jal::kernels {

struct JAL_API MoeRoutingConfig {
    uint32_t n_expert = 0;    // 32 (gpt-oss-20b), 128 (120b)
    uint32_t k = 4;           // experts used per token
    uint32_t block_rows = 0;  // 0 = as many as fit (<= 64)
    // Expert parallelism over chips (docs/multichip.md, "A model over chips"): this chip
    // holds experts [expert_base, expert_base + local_experts) of n_expert. The top k are
    // chosen and weighted over all n_expert as without it; then each id is written local
    // (id - expert_base), and a pair whose expert is on another chip keeps an id outside
    // [0, local_experts) (the expert GEMMs skip it) and weight 0 (the combine adds nothing
    // for it). 0: every expert is local.
    uint32_t expert_base = 0;
    uint32_t local_experts = 0;
    uint32_t rows_per_block() const;
};

// Arguments, in order: logits (address; rows x n_expert F32), logits_stride, ids (address;
// rows x k I32, packed), weights (address; rows x k F32, packed), rows.
JAL_API CodeObject build_moe_routing(const MoeRoutingConfig& config);

// Argument words for logits (rows x n_expert F32), ids (rows x k I32, packed) and weights
// (rows x k F32, packed).
JAL_API std::vector<uint64_t> moe_routing_args(const MoeRoutingConfig& config,
                                               const TensorRef& logits, const TensorRef& ids,
                                               const TensorRef& weights);

// Runs build_moe_routing(config)'s program. Throws jal::Error on a bad
// tensor (as moe_routing_args) or a failed dispatch (Launcher::run).
JAL_API jal_dispatch_report moe_routing(Launcher& launcher, const Program& program,
                                        const MoeRoutingConfig& config, const TensorRef& logits,
                                        const TensorRef& ids, const TensorRef& weights,
                                        const DispatchOptions& options = {});

// DeepSeek-V3's routing (llama.cpp's build_moe_ffn with LLAMA_EXPERT_GATING_FUNC_TYPE_SIGMOID,
// a selection bias exp_probs_b and expert groups; docs/deepseek.md §1):
//
//   s = sigmoid(logits);  b = s + bias (the correction bias, for the selection only)
//   groups (n_group > 1): a group's score is the sum of its two largest b; every expert
//       outside the n_group_used best groups is masked;
//   the k largest b of the unmasked experts are chosen; their weights are the unbiased s,
//   divided by their sum (norm; the sum clamped to at least 6.103515625e-5, ggml's clamp)
//   and multiplied by scale.
//
// ids and weights come out ordered by s, descending (the lower id first on ties), not by
// b as llama.cpp orders them: the same set and weights, summed in another order. The
// selection is exact but for ties: a group tying the n_group_used-th place keeps all its
// ties, and experts tying the k-th largest b are chosen among by s (llama.cpp's std::sort
// order is unspecified there too).
struct JAL_API MoeGroupRoutingConfig {
    uint32_t n_expert = 0;
    uint32_t k = 8;
    uint32_t n_group = 0;       // 0 or 1: no groups; else divides n_expert, >= 2 experts each
    uint32_t n_group_used = 0;  // groups kept (with n_group > 1): 1..n_group-1
    bool norm = true;           // divide the weights by their sum
    float scale = 1.0f;         // routed scaling (R1 2.5, Kimi K2 2.827)
    uint32_t block_rows = 0;    // 0 = as many as fit (<= 64)
    bool grouped() const { return n_group > 1; }
    uint32_t rows_per_block() const;
};

// Arguments, in order: logits (address; rows x n_expert F32), logits_stride, bias (address
// of n_expert F32), ids (address; rows x k I32, packed), weights (address; rows x k F32,
// packed), rows.
JAL_API CodeObject build_moe_group_routing(const MoeGroupRoutingConfig& config);

JAL_API std::vector<uint64_t> moe_group_routing_args(const MoeGroupRoutingConfig& config,
                                                     const TensorRef& logits, const TensorRef& bias,
                                                     const TensorRef& ids,
                                                     const TensorRef& weights);

struct JAL_API MoeCombineConfig {
    uint32_t cols = 0;  // n_embd
    uint32_t k = 4;
    uint32_t block_rows = 0;  // 0 = as many as fit (<= 64)
    // out += the weighted sum (the residual add fused: out + sum, as the elementwise add of
    // the two would give it), instead of out = the sum.
    bool residual = false;
    // Also writes out's rows RMS-normalised (norm.hpp, by norm_weight) as BF16 rounded as
    // norm_mode: the next layer's GEMM input, the same bits as its fused norm and VCVT give,
    // without reading the rows back.
    bool norm = false;
    float norm_eps = 1e-5f;
    jal_cvt_mode norm_mode = JAL_CVT_OCP;
    uint32_t rows_per_block() const;
};

// Arguments, in order: experts (address; rows*k rows of cols F32, token t's j-th expert
// at row t*k + j), expert_stride (bytes between those rows), weights (address; rows x k
// F32, packed), out (address), out_stride, rows; with norm, then norm_weight (address, cols
// F32), normed (address; rows x cols BF16), normed_stride.
JAL_API CodeObject build_moe_combine(const MoeCombineConfig& config);

// Argument words for experts (out.rows * k rows of cols F32), weights (out.rows x k F32,
// packed) and out (rows x cols F32); with config.norm also norm_weight (1 x cols F32) and
// normed (out.rows x cols BF16).
JAL_API std::vector<uint64_t> moe_combine_args(const MoeCombineConfig& config,
                                               const TensorRef& experts, const TensorRef& weights,
                                               const TensorRef& out,
                                               const TensorRef& norm_weight = {},
                                               const TensorRef& normed = {});

// Runs build_moe_combine(config)'s program. Throws jal::Error on a bad
// tensor (as moe_combine_args) or a failed dispatch (Launcher::run).
JAL_API jal_dispatch_report moe_combine(Launcher& launcher, const Program& program,
                                        const MoeCombineConfig& config, const TensorRef& experts,
                                        const TensorRef& weights, const TensorRef& out,
                                        const DispatchOptions& options = {});

}  // namespace jal::kernels
