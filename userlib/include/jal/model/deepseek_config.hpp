// The hyper-parameters of a DeepSeek-V3-architecture model (DeepSeek R1, Kimi K2/K2.5;
// "deepseek2" in GGUF, LLM_ARCH_DEEPSEEK2 in llama.cpp), read from a GGUF file the way
// llama.cpp's loader reads them (llama-model.cpp load_hparams + models/deepseek2.cpp), and
// the tensors the architecture requires. docs/deepseek.md describes the architecture.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <jal/api.h>
#include <jal/model/gguf.hpp>
#include <jal/model/gpt_oss_config.hpp>  // TensorSpec

namespace jal::model {

inline constexpr const char* kDeepseekArch = "deepseek2";

// How router logits become expert scores (llama.cpp's llama_expert_gating_func_type; the
// GGUF value of <arch>.expert_gating_func). DeepSeek V3/R1 and Kimi K2 use sigmoid.
enum class ExpertGating : uint32_t {
    softmax = 1,
    sigmoid = 2,
};
JAL_API const char* expert_gating_name(ExpertGating g) noexcept;  // "softmax", "sigmoid"

struct DeepseekConfig {
    uint32_t n_layer = 0;      // deepseek2.block_count
    uint32_t n_ctx_train = 0;  // deepseek2.context_length
    uint32_t n_embd = 0;       // deepseek2.embedding_length
    uint32_t n_ff = 0;         // deepseek2.feed_forward_length: the dense leading layers' FFN
    uint32_t n_head = 0;       // deepseek2.attention.head_count
    uint32_t n_head_kv = 1;    // deepseek2.attention.head_count_kv: 1 (MLA is stored as MQA)

    // Multi-head latent attention. The KV cache holds, per position, the normalised latent
    // (kv_lora_rank) and the RoPE key (n_rot): one "head" of key_length = kv_lora_rank +
    // n_rot whose first value_length = kv_lora_rank values are also the value.
    uint32_t q_lora_rank = 0;   // deepseek2.attention.q_lora_rank (0: attn_q, no q LoRA)
    uint32_t kv_lora_rank = 0;  // deepseek2.attention.kv_lora_rank
    uint32_t key_length = 0;    // deepseek2.attention.key_length (= kv_lora_rank + n_rot)
    uint32_t value_length = 0;  // deepseek2.attention.value_length (= kv_lora_rank)
    uint32_t head_dim_k = 0;    // deepseek2.attention.key_length_mla: q/k per head (nope + rope)
    uint32_t head_dim_v = 0;    // deepseek2.attention.value_length_mla: v per head
    uint32_t n_rot = 0;         // deepseek2.rope.dimension_count: the RoPE part of head_dim_k

    // Mixture of experts: the first n_layer_dense_lead layers have a dense SwiGLU FFN, the
    // rest routed experts plus n_expert_shared always-on shared experts.
    uint32_t n_layer_dense_lead = 0;   // deepseek2.leading_dense_block_count (default 0)
    uint32_t n_expert = 0;             // deepseek2.expert_count
    uint32_t n_expert_used = 0;        // deepseek2.expert_used_count
    uint32_t n_expert_shared = 0;      // deepseek2.expert_shared_count
    uint32_t n_ff_exp = 0;             // deepseek2.expert_feed_forward_length (routed and shared)
    uint32_t n_expert_groups = 0;      // deepseek2.expert_group_count (0 or 1: no groups)
    uint32_t n_group_used = 0;         // deepseek2.expert_group_used_count
    float expert_weights_scale = 0;    // deepseek2.expert_weights_scale (0: none)
    bool expert_weights_norm = false;  // deepseek2.expert_weights_norm
    ExpertGating gating = ExpertGating::softmax;  // deepseek2.expert_gating_func (default softmax)
    bool has_expert_bias = false;  // blk.N.exp_probs_b.bias (the selection's correction bias)

    float rms_eps = 0;                         // deepseek2.attention.layer_norm_rms_epsilon
    float rope_freq_base = 10000.0f;           // deepseek2.rope.freq_base
    std::string rope_scaling_type = "linear";  // deepseek2.rope.scaling.type: none, linear, yarn
    float rope_scaling_factor = 0;             // deepseek2.rope.scaling.factor (0: none)
    float rope_attn_factor = 1.0f;             // deepseek2.rope.scaling.attn_factor
    uint32_t rope_orig_ctx = 0;  // deepseek2.rope.scaling.original_context_length (n_ctx_train)
    // deepseek2.rope.scaling.yarn_log_multiplier as llama.cpp holds it: the converter writes
    // 0.1 x mscale_all_dim and the loader divides by 0.1 (0: none).
    float yarn_log_mul = 0;
    // llama.cpp's deepseek2 loader does not read the beta keys: always its defaults.
    float yarn_beta_fast = 32.0f;
    float yarn_beta_slow = 1.0f;

    uint32_t n_vocab = 0;         // rows of token_embd.weight
    bool tied_output = false;     // no output.weight: the LM head is token_embd
    std::string tokenizer_model;  // tokenizer.ggml.model

    uint32_t head_dim_nope() const { return head_dim_k - n_rot; }
    bool layer_is_dense(uint32_t il) const { return il < n_layer_dense_lead; }
    bool grouped() const { return n_expert_groups > 1; }
};

// Every tensor llama.cpp's deepseek2 loader creates for `config`, in its order
// (token_embd, output_norm, output, then each block).
JAL_API std::vector<TensorSpec> deepseek_tensor_specs(const DeepseekConfig& config);

// The published checkpoints' hyper-parameters ("deepseek-r1", "kimi-k2.5": their
// config.json as llama.cpp's converter writes it, without the multi-token-prediction
// layer), for projections that need the real shape without the weights; std::nullopt for
// other names.
JAL_API std::optional<DeepseekConfig> published_deepseek_config(std::string_view name);

// Reads and checks the hyper-parameters (general.architecture must be "deepseek2"), then
// checks every required tensor's presence, type and shape. Throws jal::Error
// (INVALID_FIELD) naming the missing or inconsistent key or tensor, or the feature of the
// architecture this runtime does not take (legacy unsplit attn_kv_b, multi-token
// prediction layers, attention temperature tuning, gating other than softmax or sigmoid).
JAL_API DeepseekConfig read_deepseek_config(const GgufFile& file);

}  // namespace jal::model
