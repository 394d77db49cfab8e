// DeepSeek-V3-architecture hyper-parameters from GGUF metadata, checked against the tensors,
// following llama.cpp's loader: llama_model_base::load_hparams (the generic keys, expert
// groups among them), llama_model_deepseek2::load_arch_hparams / load_arch_tensors
// (models/deepseek2.cpp), and the asserts its graph builder and build_moe_ffn rely on.
#include <jal/model/deepseek_config.hpp>

#include "config_checks.hpp"

#include <fmt/format.h>

#include <cmath>

namespace jal::model {

namespace {

constexpr uint32_t kMaxLayers = 512;   // LLAMA_MAX_LAYERS
constexpr uint32_t kMaxExperts = 512;  // LLAMA_MAX_EXPERTS

std::string key(std::string_view suffix)
{
    return fmt::format("{}.{}", kDeepseekArch, suffix);
}

[[noreturn]] void bad(const GgufFile& f, std::string_view suffix, const std::string& msg)
{
    detail::bad_key(f, key(suffix), msg);
}

// What llama.cpp reads for the attention: MLA in the split form (attn_k_b / attn_v_b) that
// current converters write. The older unsplit attn_kv_b form has no *_mla keys.
void read_attention(const GgufFile& f, DeepseekConfig& c)
{
    c.n_head = f.get_u32(key("attention.head_count"));
    c.n_head_kv = f.find_u32(key("attention.head_count_kv")).value_or(c.n_head);
    c.kv_lora_rank = f.get_u32(key("attention.kv_lora_rank"));
    // llama.cpp reads q_lora_rank except for its "lite" models (DeepSeek-V2-Lite and kin,
    // told apart by their layer count and vocabulary), which project q directly (attn_q).
    uint64_t n_vocab = f.find_u32(key("vocab_size")).value_or(0);
    if (n_vocab == 0 && f.find_kv("tokenizer.ggml.tokens"))
        n_vocab = f.array_size("tokenizer.ggml.tokens");
    const bool lite = c.n_layer == 26 || c.n_layer == 27 || (c.n_layer == 48 && n_vocab == 128256);
    c.q_lora_rank = lite ? 0 : f.get_u32(key("attention.q_lora_rank"));
    const auto k_mla = f.find_u32(key("attention.key_length_mla"));
    const auto v_mla = f.find_u32(key("attention.value_length_mla"));
    if (!k_mla || !v_mla)
        bad(f, "attention.key_length_mla",
            fmt::format("no {} / {}: an older GGUF with the unsplit attn_kv_b tensor (not taken "
                        "here; convert again with a current convert_hf_to_gguf.py, which writes "
                        "attn_k_b and attn_v_b)",
                        key("attention.key_length_mla"), key("attention.value_length_mla")));
    c.head_dim_k = *k_mla;
    c.head_dim_v = *v_mla;
    const uint32_t default_head = c.n_head ? c.n_embd / c.n_head : 0;
    c.key_length = f.find_u32(key("attention.key_length")).value_or(default_head);
    c.value_length = f.find_u32(key("attention.value_length")).value_or(default_head);
    c.n_rot = f.find_u32(key("rope.dimension_count")).value_or(c.key_length);
    c.rms_eps = f.get_f32(key("attention.layer_norm_rms_epsilon"));
    if (f.find_f32(key("attention.temperature_scale")).value_or(0.0f) != 0.0f)
        bad(f, "attention.temperature_scale",
            "attention temperature tuning (Mistral Large) is not supported");
}

void read_experts(const GgufFile& f, DeepseekConfig& c)
{
    c.n_ff = f.find_u32(key("feed_forward_length")).value_or(0);
    c.n_layer_dense_lead = f.find_u32(key("leading_dense_block_count")).value_or(0);
    c.n_expert = f.find_u32(key("expert_count")).value_or(0);
    c.n_expert_used = f.find_u32(key("expert_used_count")).value_or(0);
    c.n_expert_groups = f.find_u32(key("expert_group_count")).value_or(0);
    c.n_group_used = f.find_u32(key("expert_group_used_count")).value_or(0);
    c.n_ff_exp = f.get_u32(key("expert_feed_forward_length"));
    c.n_expert_shared = f.get_u32(key("expert_shared_count"));
    c.expert_weights_scale = f.find_f32(key("expert_weights_scale")).value_or(0.0f);
    c.expert_weights_norm = f.find_bool(key("expert_weights_norm")).value_or(false);
    // Absent (0): softmax, as llama.cpp assumes for DeepSeek V2/V2.5 files.
    const uint32_t gating = f.find_u32(key("expert_gating_func")).value_or(1);
    if (gating != 1 && gating != 2)
        bad(f, "expert_gating_func",
            fmt::format("expert_gating_func {}, expected 1 (softmax) or 2 (sigmoid)", gating));
    c.gating = static_cast<ExpertGating>(gating);
    if (f.find_u32(key("nextn_predict_layers")).value_or(0) != 0)
        bad(f, "nextn_predict_layers",
            "multi-token-prediction layers are not supported (convert without them, as "
            "convert_hf_to_gguf.py does for deepseek2)");
}

void read_rope(const GgufFile& f, DeepseekConfig& c)
{
    c.rope_freq_base = f.find_f32(key("rope.freq_base")).value_or(10000.0f);
    c.rope_scaling_type = std::string(f.find_string(key("rope.scaling.type")).value_or("linear"));
    c.rope_scaling_factor = f.find_f32(key("rope.scaling.factor")).value_or(0.0f);
    c.rope_attn_factor = f.find_f32(key("rope.scaling.attn_factor")).value_or(1.0f);
    c.rope_orig_ctx =
        f.find_u32(key("rope.scaling.original_context_length")).value_or(c.n_ctx_train);
    // [TAG_DEEPSEEK2_YARN_LOG_MUL_FIX]: the converter writes 0.1 x mscale_all_dim.
    if (const auto m = f.find_f32(key("rope.scaling.yarn_log_multiplier")))
        c.yarn_log_mul = *m / 0.1f;
}

void check_attention(const GgufFile& f, const DeepseekConfig& c)
{
    if (c.n_head == 0) bad(f, "attention.head_count", "head_count 0, expected at least 1");
    if (c.n_head_kv != 1)
        bad(f, "attention.head_count_kv",
            fmt::format("head_count_kv {}, expected 1 (MLA is stored as one latent KV head)",
                        c.n_head_kv));
    if (c.kv_lora_rank == 0)
        bad(f, "attention.kv_lora_rank", "kv_lora_rank 0, expected at least 1");
    if (c.n_rot == 0 || c.n_rot % 2 != 0)
        bad(f, "rope.dimension_count",
            fmt::format("rope.dimension_count {}, expected a positive even number", c.n_rot));
    if (c.head_dim_k <= c.n_rot)
        bad(f, "attention.key_length_mla",
            fmt::format("key_length_mla {}, expected more than rope.dimension_count {} (the "
                        "non-RoPE part of each query/key head is key_length_mla - n_rot)",
                        c.head_dim_k, c.n_rot));
    if (c.head_dim_v == 0)
        bad(f, "attention.value_length_mla", "value_length_mla 0, expected at least 1");
    if (c.key_length != c.kv_lora_rank + c.n_rot)
        bad(f, "attention.key_length",
            fmt::format("key_length {}, expected kv_lora_rank + rope.dimension_count = {} (the "
                        "cached latent and RoPE key)",
                        c.key_length, c.kv_lora_rank + c.n_rot));
    if (c.value_length != c.kv_lora_rank)
        bad(f, "attention.value_length",
            fmt::format("value_length {}, expected kv_lora_rank {} (the cached latent)",
                        c.value_length, c.kv_lora_rank));
    if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f))
        bad(f, "attention.layer_norm_rms_epsilon",
            fmt::format("layer_norm_rms_epsilon {}, expected in (0, 1)", c.rms_eps));
}

void check_groups(const GgufFile& f, const DeepseekConfig& c)
{
    // llama_model_base::load_hparams asserts these; build_moe_ffn sums each group's best
    // two scores, and the groups kept must hold the experts used.
    if (c.n_expert_groups >= c.n_expert)
        bad(f, "expert_group_count",
            fmt::format("expert_group_count {}, expected fewer than expert_count {}",
                        c.n_expert_groups, c.n_expert));
    if (!c.grouped()) return;
    if (c.n_expert % c.n_expert_groups != 0 || c.n_expert / c.n_expert_groups < 2)
        bad(f, "expert_group_count",
            fmt::format("expert_group_count {}, expected a divisor of expert_count {} leaving "
                        "at least 2 experts a group",
                        c.n_expert_groups, c.n_expert));
    if (c.n_group_used == 0 || c.n_group_used >= c.n_expert_groups)
        bad(f, "expert_group_used_count",
            fmt::format("expert_group_used_count {}, expected 1..{} (fewer than the groups)",
                        c.n_group_used, c.n_expert_groups - 1));
    if (c.n_expert_used > c.n_group_used * (c.n_expert / c.n_expert_groups))
        bad(f, "expert_used_count",
            fmt::format("expert_used_count {}, more than the {} experts of the {} groups kept",
                        c.n_expert_used, c.n_group_used * (c.n_expert / c.n_expert_groups),
                        c.n_group_used));
}

void check_experts(const GgufFile& f, const DeepseekConfig& c)
{
    if (c.n_layer_dense_lead > c.n_layer)
        bad(f, "leading_dense_block_count",
            fmt::format("leading_dense_block_count {}, expected at most block_count {}",
                        c.n_layer_dense_lead, c.n_layer));
    if (c.n_layer_dense_lead > 0 && c.n_ff == 0)
        bad(f, "feed_forward_length",
            fmt::format("{} leading dense layers need feed_forward_length (their FFN width)",
                        c.n_layer_dense_lead));
    if (c.n_layer_dense_lead == c.n_layer) return;  // no MoE layer
    if (c.n_expert == 0 || c.n_expert > kMaxExperts)
        bad(f, "expert_count",
            fmt::format("expert_count {}, expected 1..{}", c.n_expert, kMaxExperts));
    if (c.n_expert_used == 0 || c.n_expert_used > c.n_expert)
        bad(f, "expert_used_count",
            fmt::format("expert_used_count {}, expected 1..expert_count ({})", c.n_expert_used,
                        c.n_expert));
    if (c.n_ff_exp == 0)
        bad(f, "expert_feed_forward_length", "expert_feed_forward_length 0, expected at least 1");
    if (c.n_expert_shared == 0)
        bad(f, "expert_shared_count",
            "expert_shared_count 0, expected at least 1 (the shared expert's tensors are "
            "n_ff_exp x expert_shared_count wide)");
    if (!std::isfinite(c.expert_weights_scale) || c.expert_weights_scale < 0.0f)
        bad(f, "expert_weights_scale",
            fmt::format("expert_weights_scale {}, expected a finite value >= 0",
                        c.expert_weights_scale));
    check_groups(f, c);
}

void check_rope(const GgufFile& f, const DeepseekConfig& c)
{
    if (!(c.rope_freq_base > 0.0f) || !std::isfinite(c.rope_freq_base))
        bad(f, "rope.freq_base",
            fmt::format("rope.freq_base {}, expected a finite value > 0", c.rope_freq_base));
    if (c.rope_scaling_type != "none" && c.rope_scaling_type != "linear" &&
        c.rope_scaling_type != "yarn")
        bad(f, "rope.scaling.type",
            fmt::format("rope.scaling.type '{}', expected none, linear or yarn",
                        c.rope_scaling_type));
    if (!(c.rope_scaling_factor >= 0.0f) || !std::isfinite(c.rope_scaling_factor))
        bad(f, "rope.scaling.factor",
            fmt::format("rope.scaling.factor {}, expected a finite value >= 0",
                        c.rope_scaling_factor));
    if (!std::isfinite(c.rope_attn_factor))
        bad(f, "rope.scaling.attn_factor",
            fmt::format("rope.scaling.attn_factor {}, expected a finite number",
                        c.rope_attn_factor));
    if (!std::isfinite(c.yarn_log_mul))
        bad(f, "rope.scaling.yarn_log_multiplier",
            fmt::format("rope.scaling.yarn_log_multiplier {}, expected a finite number",
                        c.yarn_log_mul * 0.1f));
}

void check_hparams(const GgufFile& f, const DeepseekConfig& c)
{
    if (c.n_layer == 0 || c.n_layer > kMaxLayers)
        bad(f, "block_count", fmt::format("block_count {}, expected 1..{}", c.n_layer, kMaxLayers));
    if (c.n_embd == 0) bad(f, "embedding_length", "embedding_length 0, expected at least 1");
    if (c.n_ctx_train == 0) bad(f, "context_length", "context_length 0, expected at least 1");
    check_attention(f, c);
    check_experts(f, c);
    check_rope(f, c);
}

}  // namespace

const char* expert_gating_name(ExpertGating g) noexcept
{
    switch (g) {
    case ExpertGating::softmax:
        return "softmax";
    case ExpertGating::sigmoid:
        return "sigmoid";
    }
    return "?";
}

DeepseekConfig read_deepseek_config(const GgufFile& f)
{
    const std::string_view arch = f.get_string("general.architecture");
    if (arch != kDeepseekArch)
        detail::bad_key(f, "general.architecture",
                        fmt::format("architecture '{}', expected '{}'", arch, kDeepseekArch));

    DeepseekConfig c;
    c.n_ctx_train = f.get_u32(key("context_length"));
    c.n_embd = f.get_u32(key("embedding_length"));
    c.n_layer = f.get_u32(key("block_count"));
    read_attention(f, c);
    read_experts(f, c);
    read_rope(f, c);
    c.tokenizer_model = std::string(f.get_string("tokenizer.ggml.model"));
    check_hparams(f, c);

    c.n_vocab = detail::read_vocab_size(f, kDeepseekArch, c.n_embd, c.tokenizer_model);
    c.tied_output = f.find_tensor("output.weight") == nullptr;
    // The correction bias is optional in llama.cpp (DeepSeek V2 has none); all MoE layers
    // have it or none do.
    c.has_expert_bias =
        f.find_tensor(fmt::format("blk.{}.exp_probs_b.bias", c.n_layer_dense_lead)) != nullptr;
    detail::check_tensor_specs(f, deepseek_tensor_specs(c), kDeepseekArch);
    return c;
}

}  // namespace jal::model
