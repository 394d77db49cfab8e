// Synthetic DeepSeek-V3-architecture models ("deepseek2"): random weights from a seed, the
// real architecture and metadata as llama.cpp's converter writes them for DeepSeek R1 and
// Kimi K2 (MLA with the split attn_k_b / attn_v_b, sigmoid routing with the correction
// bias, expert groups, a shared expert, dense leading layers, YaRN), loadable by llama.cpp.
// For tests (jal-mkmodel --preset ds-tiny | kimi-tiny); see docs/deepseek.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <jal/api.h>
#include <jal/model/deepseek_config.hpp>
#include <jal/model/synthetic_gpt_oss.hpp>  // SyntheticProgress

namespace jal::model {

struct SyntheticDeepseekOptions {
    uint64_t seed = 1;
    uint32_t n_layer = 3;
    uint32_t n_embd = 64;  // multiple of 32 (MXFP4 rows of the experts)
    uint32_t n_head = 4;
    uint32_t q_lora_rank = 32;  // 0: attn_q directly (needs the lite layer counts 26/27)
    uint32_t kv_lora_rank = 32;
    uint32_t head_dim_nope = 16;  // qk_nope_head_dim
    uint32_t n_rot = 16;          // qk_rope_head_dim (even)
    uint32_t head_dim_v = 16;     // v_head_dim
    uint32_t n_layer_dense_lead = 1;
    uint32_t n_ff = 128;  // the dense layers' FFN width
    uint32_t n_expert = 16;
    uint32_t n_expert_used = 4;
    uint32_t n_expert_shared = 1;
    uint32_t n_ff_exp = 32;        // multiple of 32 (MXFP4 rows of the down projection)
    uint32_t n_expert_groups = 4;  // 1: no groups (written as Kimi K2 writes it)
    uint32_t n_group_used = 2;
    float expert_weights_scale = 2.5f;
    uint32_t n_vocab = 256;
    uint32_t n_ctx = 163840;  // context_length
    float rope_freq_base = 10000.0f;
    float rope_scaling_factor = 40.0f;  // YaRN over rope_orig_ctx
    uint32_t rope_orig_ctx = 4096;
    // Everything but the routed experts (MXFP4), norms and the correction bias (F32): F32,
    // or F16, BF16 or Q8_0 rounded from the same draws as ggml rounds them.
    TensorType dense_type = TensorType::F32;
    std::string preset;  // recorded in general.name
};

// The named shapes: "ds-tiny" (R1's routing: 4 groups of 4 experts, 2 groups kept, top-4,
// one dense layer) and "kimi-tiny" (Kimi K2's: 32 experts, top-8, no groups); see
// docs/deepseek.md.
JAL_API std::vector<std::string> synthetic_deepseek_preset_names();
JAL_API std::optional<SyntheticDeepseekOptions> synthetic_deepseek_preset(std::string_view name);

// The hyper-parameters a model written with `options` has; throws INVALID_FIELD when the
// options cannot make a valid model (naming the option).
JAL_API DeepseekConfig synthetic_deepseek_config(const SyntheticDeepseekOptions& options);

struct SyntheticDeepseekSummary {
    DeepseekConfig config;
    uint64_t file_bytes = 0;
    uint64_t parameters = 0;
    size_t tensors = 0;
};

// Writes the model to `path` (through a temporary file renamed at the end). The same
// options always give the same bytes.
JAL_API SyntheticDeepseekSummary write_synthetic_deepseek(const std::string& path,
                                                          const SyntheticDeepseekOptions& options,
                                                          const SyntheticProgress& progress = {});

}  // namespace jal::model
