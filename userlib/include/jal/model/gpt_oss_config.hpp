// The hyper-parameters of a GPT-OSS-architecture model ("gpt-oss" in GGUF, LLM_ARCH_OPENAI_MOE
// in llama.cpp), read from a GGUF file the way llama.cpp's loader reads them (llama-model.cpp
// load_hparams + models/openai-moe.cpp), and the tensors the architecture requires.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <jal/api.h>
#include <jal/model/gguf.hpp>

namespace jal::model {

inline constexpr const char* kGptOssArch = "gpt-oss";

struct GptOssConfig {
    uint32_t n_layer = 0;             // gpt-oss.block_count
    uint32_t n_ctx_train = 0;         // gpt-oss.context_length
    uint32_t n_embd = 0;              // gpt-oss.embedding_length
    uint32_t n_ff = 0;                // gpt-oss.feed_forward_length (optional; unused by the graph)
    uint32_t n_head = 0;              // gpt-oss.attention.head_count
    uint32_t n_head_kv = 0;           // gpt-oss.attention.head_count_kv (default n_head)
    uint32_t head_dim = 0;            // gpt-oss.attention.key_length (default n_embd / n_head)
    uint32_t head_dim_v = 0;          // gpt-oss.attention.value_length (must equal head_dim)
    uint32_t n_rot = 0;               // gpt-oss.rope.dimension_count (default head_dim)
    uint32_t n_expert = 0;            // gpt-oss.expert_count
    uint32_t n_expert_used = 0;       // gpt-oss.expert_used_count
    uint32_t n_ff_exp = 0;            // gpt-oss.expert_feed_forward_length
    uint32_t n_vocab = 0;             // rows of token_embd.weight
    uint32_t sliding_window = 0;      // gpt-oss.attention.sliding_window
    uint32_t swa_period = 2;          // gpt-oss.attention.sliding_window_pattern (default 2)
    float rms_eps = 0;                // gpt-oss.attention.layer_norm_rms_epsilon
    float rope_freq_base = 10000.0f;  // gpt-oss.rope.freq_base
    float rope_freq_base_swa = 0;     // gpt-oss.rope.freq_base_swa (default rope_freq_base)
    std::string rope_scaling_type = "linear";  // gpt-oss.rope.scaling.type: none, linear, yarn
    float rope_scaling_factor = 0;             // gpt-oss.rope.scaling.factor (0: none)
    float rope_attn_factor = 1.0f;             // gpt-oss.rope.scaling.attn_factor
    uint32_t rope_orig_ctx =
        0;  // gpt-oss.rope.scaling.original_context_length (default n_ctx_train)
    float yarn_beta_fast = 32.0f;  // llama.cpp's defaults (llama-hparams.h)
    float yarn_beta_slow = 1.0f;
    float expert_weights_scale = 0;  // gpt-oss.expert_weights_scale (0: none)
    std::string tokenizer_model;     // tokenizer.ggml.model ("gpt2", "none", ...)

    // llama_hparams::set_swa_pattern(period): layer il attends through the sliding window
    // unless it is the last of each period (period 2: even layers sliding, odd full).
    bool layer_uses_swa(uint32_t il) const
    {
        return swa_period == 0 || il % swa_period < swa_period - 1;
    }
};

// What the architecture requires of one tensor.
struct TensorSpec {
    std::string name;
    std::vector<uint64_t> ne;               // ggml order
    std::vector<TensorType> allowed_types;  // F32 only for norms, biases and sinks
};

// Every tensor llama.cpp's gpt-oss loader creates, in the order of the reference
// conversion (token_embd, then each block, then output_norm, output).
JAL_API std::vector<TensorSpec> gpt_oss_tensor_specs(const GptOssConfig& config);

// The published OpenAI checkpoints' hyper-parameters ("gpt-oss-20b", "gpt-oss-120b": their
// config.json as llama.cpp's converter writes it), for projections that need the real
// shape without the weights; std::nullopt for other names.
JAL_API std::optional<GptOssConfig> published_gpt_oss_config(std::string_view name);

// Reads and checks the hyper-parameters (general.architecture must be "gpt-oss"), then
// checks every required tensor's presence, type and shape. Throws jal::Error
// (INVALID_FIELD) naming the missing or inconsistent key or tensor.
JAL_API GptOssConfig read_gpt_oss_config(const GgufFile& file);

}  // namespace jal::model
