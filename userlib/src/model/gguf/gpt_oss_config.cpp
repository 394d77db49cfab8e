// GPT-OSS hyper-parameters from GGUF metadata, checked against the tensors, following
// llama.cpp's loader: llama_model_base::load_hparams (the generic keys),
// llama_model_openai_moe::load_arch_hparams / load_arch_tensors (models/openai-moe.cpp).
#include <jal/model/gpt_oss_config.hpp>

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
    return fmt::format("{}.{}", kGptOssArch, suffix);
}

[[noreturn]] void bad(const GgufFile& f, std::string_view k, const std::string& msg)
{
    detail::bad_key(f, k, msg);
}

// Every other real-valued hyper-parameter must be a number: NaN or infinity would turn
// every activation into NaN (or hang a sampler) far from the key that caused it.
void check_finite(const GgufFile& f, const GptOssConfig& c)
{
    const std::pair<const char*, float> values[] = {
        {"rope.freq_base", c.rope_freq_base},
        {"rope.freq_base_swa", c.rope_freq_base_swa},
        {"rope.scaling.attn_factor", c.rope_attn_factor},
        {"rope.scaling.yarn_beta_fast", c.yarn_beta_fast},
        {"rope.scaling.yarn_beta_slow", c.yarn_beta_slow},
        {"expert_weights_scale", c.expert_weights_scale},
    };
    for (const auto& [name, v] : values)
        if (!std::isfinite(v))
            bad(f, key(name), fmt::format("{} {}, expected a finite number", name, v));
}

void check_hparams(const GgufFile& f, const GptOssConfig& c)
{
    if (c.n_layer == 0 || c.n_layer > kMaxLayers)
        bad(f, key("block_count"),
            fmt::format("block_count {}, expected 1..{}", c.n_layer, kMaxLayers));
    if (c.n_embd == 0) bad(f, key("embedding_length"), "embedding_length 0, expected at least 1");
    if (c.n_ctx_train == 0) bad(f, key("context_length"), "context_length 0, expected at least 1");
    if (c.n_head == 0) bad(f, key("attention.head_count"), "head_count 0, expected at least 1");
    if (c.n_head_kv == 0 || c.n_head % c.n_head_kv != 0)
        bad(f, key("attention.head_count_kv"),
            fmt::format("head_count_kv {}, expected a divisor of head_count {}", c.n_head_kv,
                        c.n_head));
    if (c.head_dim == 0 || c.head_dim % 2 != 0)
        bad(f, key("attention.key_length"),
            fmt::format("key_length {}, expected a positive even number (NEOX RoPE rotates pairs)",
                        c.head_dim));
    if (c.head_dim_v != c.head_dim)
        bad(f, key("attention.value_length"),
            fmt::format("value_length {}, expected key_length {}", c.head_dim_v, c.head_dim));
    if (c.n_rot != c.head_dim)
        bad(f, key("rope.dimension_count"),
            fmt::format("rope.dimension_count {}, expected key_length {} (gpt-oss sizes q/k by it)",
                        c.n_rot, c.head_dim));
    if (c.n_expert == 0 || c.n_expert > kMaxExperts)
        bad(f, key("expert_count"),
            fmt::format("expert_count {}, expected 1..{}", c.n_expert, kMaxExperts));
    if (c.n_expert_used == 0 || c.n_expert_used > c.n_expert)
        bad(f, key("expert_used_count"),
            fmt::format("expert_used_count {}, expected 1..expert_count ({})", c.n_expert_used,
                        c.n_expert));
    if (c.n_ff_exp == 0)
        bad(f, key("expert_feed_forward_length"),
            "expert_feed_forward_length 0, expected at least 1");
    if (c.sliding_window == 0)
        bad(f, key("attention.sliding_window"), "sliding_window 0, expected at least 1");
    if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f))
        bad(f, key("attention.layer_norm_rms_epsilon"),
            fmt::format("layer_norm_rms_epsilon {}, expected in (0, 1)", c.rms_eps));
    if (!(c.rope_freq_base > 0.0f))
        bad(f, key("rope.freq_base"),
            fmt::format("rope.freq_base {}, expected > 0", c.rope_freq_base));
    if (c.rope_scaling_type != "none" && c.rope_scaling_type != "linear" &&
        c.rope_scaling_type != "yarn")
        bad(f, key("rope.scaling.type"),
            fmt::format("rope.scaling.type '{}', expected none, linear or yarn",
                        c.rope_scaling_type));
    if (!(c.rope_scaling_factor >= 0.0f) || !std::isfinite(c.rope_scaling_factor))
        bad(f, key("rope.scaling.factor"),
            fmt::format("rope.scaling.factor {}, expected a finite value >= 0",
                        c.rope_scaling_factor));
    check_finite(f, c);
}

}  // namespace

std::vector<TensorSpec> gpt_oss_tensor_specs(const GptOssConfig& c)
{
    const uint64_t e = c.n_embd, v = c.n_vocab, q = uint64_t{c.n_head} * c.head_dim,
                   kv = uint64_t{c.n_head_kv} * c.head_dim, x = c.n_expert, ff = c.n_ff_exp;
    std::vector<TensorSpec> s;
    s.push_back({"token_embd.weight", {e, v}, detail::matrix_types()});
    for (uint32_t i = 0; i < c.n_layer; ++i) {
        auto n = [i](std::string_view what) { return fmt::format("blk.{}.{}", i, what); };
        s.push_back({n("attn_norm.weight"), {e}, detail::f32_only()});
        s.push_back({n("attn_q.weight"), {e, q}, detail::matrix_types()});
        s.push_back({n("attn_q.bias"), {q}, detail::f32_only()});
        s.push_back({n("attn_k.weight"), {e, kv}, detail::matrix_types()});
        s.push_back({n("attn_k.bias"), {kv}, detail::f32_only()});
        s.push_back({n("attn_v.weight"), {e, kv}, detail::matrix_types()});
        s.push_back({n("attn_v.bias"), {kv}, detail::f32_only()});
        s.push_back({n("attn_output.weight"), {q, e}, detail::matrix_types()});
        s.push_back({n("attn_output.bias"), {e}, detail::f32_only()});
        s.push_back({n("attn_sinks.weight"), {uint64_t{c.n_head}}, detail::f32_only()});
        s.push_back({n("post_attention_norm.weight"), {e}, detail::f32_only()});
        s.push_back({n("ffn_gate_inp.weight"), {e, x}, detail::matrix_types()});
        s.push_back({n("ffn_gate_inp.bias"), {x}, detail::f32_only()});
        s.push_back({n("ffn_gate_exps.weight"), {e, ff, x}, detail::matrix_types()});
        s.push_back({n("ffn_gate_exps.bias"), {ff, x}, detail::f32_only()});
        s.push_back({n("ffn_up_exps.weight"), {e, ff, x}, detail::matrix_types()});
        s.push_back({n("ffn_up_exps.bias"), {ff, x}, detail::f32_only()});
        s.push_back({n("ffn_down_exps.weight"), {ff, e, x}, detail::matrix_types()});
        s.push_back({n("ffn_down_exps.bias"), {e, x}, detail::f32_only()});
    }
    s.push_back({"output_norm.weight", {e}, detail::f32_only()});
    s.push_back({"output.weight", {e, v}, detail::matrix_types()});
    return s;
}

std::optional<GptOssConfig> published_gpt_oss_config(std::string_view name)
{
    // openai/gpt-oss-{20b,120b} config.json: the two differ only in depth and expert count.
    GptOssConfig c;
    if (name == "gpt-oss-20b")
        c.n_layer = 24, c.n_expert = 32;
    else if (name == "gpt-oss-120b")
        c.n_layer = 36, c.n_expert = 128;
    else
        return std::nullopt;
    c.n_ctx_train = 131072;
    c.n_embd = 2880;
    c.n_ff = 2880;
    c.n_head = 64;
    c.n_head_kv = 8;
    c.head_dim = c.head_dim_v = c.n_rot = 64;
    c.n_expert_used = 4;
    c.n_ff_exp = 2880;
    c.n_vocab = 201088;
    c.sliding_window = 128;
    c.swa_period = 2;
    c.rms_eps = 1e-5f;
    c.rope_freq_base = c.rope_freq_base_swa = 150000.0f;
    c.rope_scaling_type = "yarn";
    c.rope_scaling_factor = 32.0f;
    c.rope_orig_ctx = 4096;
    c.tokenizer_model = "gpt2";
    return c;
}

GptOssConfig read_gpt_oss_config(const GgufFile& f)
{
    const std::string_view arch = f.get_string("general.architecture");
    if (arch != kGptOssArch)
        bad(f, "general.architecture",
            fmt::format("architecture '{}', expected '{}'{}", arch, kGptOssArch,
                        arch == kDeepseekArch ? " (DeepSeek-V3 models are read and checked "
                                                "but not run on the chip yet: docs/deepseek.md)"
                                              : ""));

    GptOssConfig c;
    c.n_ctx_train = f.get_u32(key("context_length"));
    c.n_embd = f.get_u32(key("embedding_length"));
    c.n_layer = f.get_u32(key("block_count"));
    c.n_expert = f.get_u32(key("expert_count"));
    c.n_expert_used = f.get_u32(key("expert_used_count"));
    c.n_ff = f.find_u32(key("feed_forward_length")).value_or(0);
    c.n_head = f.get_u32(key("attention.head_count"));
    c.n_head_kv = f.find_u32(key("attention.head_count_kv")).value_or(c.n_head);
    const uint32_t default_head_dim = c.n_head ? c.n_embd / c.n_head : 0;
    c.head_dim = f.find_u32(key("attention.key_length")).value_or(default_head_dim);
    c.head_dim_v = f.find_u32(key("attention.value_length")).value_or(default_head_dim);
    c.n_rot = f.find_u32(key("rope.dimension_count")).value_or(c.head_dim);
    c.rms_eps = f.get_f32(key("attention.layer_norm_rms_epsilon"));
    c.n_ff_exp = f.get_u32(key("expert_feed_forward_length"));
    c.sliding_window = f.get_u32(key("attention.sliding_window"));
    c.swa_period = f.find_u32(key("attention.sliding_window_pattern")).value_or(2);
    c.rope_freq_base = f.find_f32(key("rope.freq_base")).value_or(10000.0f);
    c.rope_freq_base_swa = f.find_f32(key("rope.freq_base_swa")).value_or(c.rope_freq_base);
    c.rope_scaling_type = std::string(f.find_string(key("rope.scaling.type")).value_or("linear"));
    c.rope_scaling_factor = f.find_f32(key("rope.scaling.factor")).value_or(0.0f);
    c.rope_attn_factor = f.find_f32(key("rope.scaling.attn_factor")).value_or(1.0f);
    c.rope_orig_ctx =
        f.find_u32(key("rope.scaling.original_context_length")).value_or(c.n_ctx_train);
    c.yarn_beta_fast = f.find_f32(key("rope.scaling.yarn_beta_fast")).value_or(32.0f);
    c.yarn_beta_slow = f.find_f32(key("rope.scaling.yarn_beta_slow")).value_or(1.0f);
    c.expert_weights_scale = f.find_f32(key("expert_weights_scale")).value_or(0.0f);
    c.tokenizer_model = std::string(f.get_string("tokenizer.ggml.model"));
    check_hparams(f, c);

    c.n_vocab = detail::read_vocab_size(f, kGptOssArch, c.n_embd, c.tokenizer_model);
    detail::check_tensor_specs(f, gpt_oss_tensor_specs(c), kGptOssArch);
    return c;
}

}  // namespace jal::model
