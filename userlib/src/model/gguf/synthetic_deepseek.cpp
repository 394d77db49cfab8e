// Synthetic DeepSeek-V3-architecture models: metadata as convert_hf_to_gguf.py writes it for
// DeepseekV3ForCausalLM (DeepseekV2Model.set_gguf_parameters and the generic keys), weights
// drawn from a seeded generator, routed experts MXFP4 with ggml's rounding.
#include <jal/model/synthetic_deepseek.hpp>

#include <fmt/format.h>

#include "synthetic_common.hpp"

#include <cmath>

namespace jal::model {

namespace {

using detail::ends_with;

void require(bool ok, std::string_view option, const std::string& why)
{
    if (!ok)
        throw Error(JAL_STATUS_INVALID_FIELD, fmt::format("synthetic model: --{} {}", option, why));
}

// mean + std * N(0, 1) per tensor. As for the GPT-OSS models, the scales keep activations
// near unit size through the residual stream while attention and routing still depend on
// the context: each projection's std is 1/sqrt(its input width) (down projections half).
detail::TensorDraw draw_for(const TensorSpec& spec, const DeepseekConfig& c, TensorType dense)
{
    const std::string_view n = spec.name;
    auto inv_sqrt = [](uint64_t k) { return 1.0f / std::sqrt(static_cast<float>(k)); };
    const TensorType type = ends_with(n, "_exps.weight") ? TensorType::MXFP4
                            : spec.ne.size() == 1        ? TensorType::F32
                                                         : dense;
    auto d = [&](float mean, float std) { return detail::TensorDraw{mean, std, type}; };
    if (ends_with(n, "norm.weight")) return d(1.0f, 0.1f);
    if (ends_with(n, "exp_probs_b.bias")) return d(0.0f, 0.1f);
    if (n == "token_embd.weight") return d(0.0f, 1.0f);
    if (n == "output.weight") return d(0.0f, 4.0f * inv_sqrt(c.n_embd));
    // attn_k_b and attn_v_b act on the normalised latent (kv_b_proj's input).
    if (ends_with(n, "attn_k_b.weight") || ends_with(n, "attn_v_b.weight"))
        return d(0.0f, inv_sqrt(c.kv_lora_rank));
    if (ends_with(n, "attn_q_b.weight")) return d(0.0f, inv_sqrt(c.q_lora_rank));
    if (ends_with(n, "attn_output.weight"))
        return d(0.0f, inv_sqrt(uint64_t{c.n_head} * c.head_dim_v));
    if (ends_with(n, "ffn_gate_inp.weight")) return d(0.0f, 2.0f * inv_sqrt(c.n_embd));
    if (ends_with(n, "ffn_down.weight")) return d(0.0f, 0.5f * inv_sqrt(c.n_ff));
    if (ends_with(n, "ffn_down_exps.weight")) return d(0.0f, 0.5f * inv_sqrt(c.n_ff_exp));
    if (ends_with(n, "ffn_down_shexp.weight"))
        return d(0.0f, 0.5f * inv_sqrt(uint64_t{c.n_ff_exp} * c.n_expert_shared));
    return d(0.0f, inv_sqrt(c.n_embd));  // q_a, kv_a_mqa, gate and up projections
}

void check_shape_options(const SyntheticDeepseekOptions& o)
{
    require(o.n_layer >= 1 && o.n_layer <= 512, "layers",
            fmt::format("{}: expected 1..512", o.n_layer));
    require(o.n_embd >= 32 && o.n_embd % 32 == 0, "hidden",
            fmt::format("{}: expected a positive multiple of 32 (MXFP4 blocks)", o.n_embd));
    require(o.n_head >= 1, "heads", "0: expected at least 1");
    require(o.q_lora_rank >= 1 || o.n_layer == 26 || o.n_layer == 27, "q-lora-rank",
            "0: llama.cpp projects q directly only for 26 or 27 layers (its lite models)");
    require(o.kv_lora_rank >= 1, "kv-lora-rank", "0: expected at least 1");
    require(o.head_dim_nope >= 1, "head-dim", "0: expected at least 1 (the non-RoPE part)");
    require(o.n_rot >= 2 && o.n_rot % 2 == 0, "rope-dim",
            fmt::format("{}: expected a positive even number", o.n_rot));
    require(o.head_dim_v >= 1, "head-dim", "0: expected at least 1 (values)");
    require(o.n_layer_dense_lead <= o.n_layer, "dense-layers",
            fmt::format("{}: expected at most --layers {}", o.n_layer_dense_lead, o.n_layer));
    require(o.n_ff >= 1, "dense-ffn", "0: expected at least 1");
    require(o.n_expert >= 2 && o.n_expert <= 512, "experts",
            fmt::format("{}: expected 2..512", o.n_expert));
    require(o.n_expert_used >= 1 && o.n_expert_used <= o.n_expert, "experts-per-token",
            fmt::format("{}: expected 1..--experts ({})", o.n_expert_used, o.n_expert));
    require(o.n_expert_shared >= 1, "shared-experts", "0: expected at least 1");
    require(o.n_ff_exp >= 32 && o.n_ff_exp % 32 == 0, "expert-ffn",
            fmt::format("{}: expected a positive multiple of 32 (MXFP4 blocks)", o.n_ff_exp));
    require(o.n_vocab >= 2, "vocab", fmt::format("{}: expected at least 2", o.n_vocab));
    require(o.n_ctx >= 1, "context", "0: expected at least 1");
}

void check_groups(const SyntheticDeepseekOptions& o)
{
    require(o.n_expert_groups >= 1 && o.n_expert_groups < o.n_expert, "expert-groups",
            fmt::format("{}: expected 1 (none) up to fewer than --experts {}", o.n_expert_groups,
                        o.n_expert));
    if (o.n_expert_groups == 1) return;
    const uint32_t per_group = o.n_expert / o.n_expert_groups;
    require(o.n_expert % o.n_expert_groups == 0 && per_group >= 2, "expert-groups",
            fmt::format("{}: expected a divisor of --experts {} leaving at least 2 a group",
                        o.n_expert_groups, o.n_expert));
    require(o.n_group_used >= 1 && o.n_group_used < o.n_expert_groups, "groups-used",
            fmt::format("{}: expected 1..{}", o.n_group_used, o.n_expert_groups - 1));
    require(o.n_expert_used <= o.n_group_used * per_group, "experts-per-token",
            fmt::format("{}: more than the {} experts of the {} groups kept", o.n_expert_used,
                        o.n_group_used * per_group, o.n_group_used));
}

// Every matrix stored in the dense type must have whole blocks in its rows.
void check_dense_blocks(const DeepseekConfig& c, TensorType dense)
{
    const uint32_t block = tensor_type_info(dense).block_elements;
    for (const TensorSpec& s : deepseek_tensor_specs(c)) {
        const detail::TensorDraw d = draw_for(s, c, dense);
        require(d.type != dense || s.ne[0] % block == 0, "dense-type",
                fmt::format("{} needs the rows of {} ({}) a multiple of {}",
                            tensor_type_name(dense), s.name, s.ne[0], block));
    }
}

}  // namespace

std::vector<std::string> synthetic_deepseek_preset_names()
{
    return {"ds-tiny", "kimi-tiny"};
}

std::optional<SyntheticDeepseekOptions> synthetic_deepseek_preset(std::string_view name)
{
    SyntheticDeepseekOptions o;  // the defaults are ds-tiny
    o.preset = std::string(name);
    if (name == "ds-tiny") return o;
    if (name != "kimi-tiny") return std::nullopt;
    // Kimi K2's routing and proportions: many experts, top-8, no groups (written as
    // n_group 1), one dense layer, half the heads; its RoPE (theta 50000, YaRN x64).
    o.n_layer = 3, o.n_head = 2, o.n_layer_dense_lead = 1;
    o.n_expert = 32, o.n_expert_used = 8, o.n_expert_groups = 1, o.n_group_used = 1;
    o.expert_weights_scale = 2.827f;
    o.n_ctx = 262144, o.rope_freq_base = 50000.0f, o.rope_scaling_factor = 64.0f;
    return o;
}

DeepseekConfig synthetic_deepseek_config(const SyntheticDeepseekOptions& o)
{
    check_shape_options(o);
    check_groups(o);
    const TensorType dt = o.dense_type;
    require(dt == TensorType::F32 || dt == TensorType::F16 || dt == TensorType::BF16 ||
                dt == TensorType::Q8_0,
            "dense-type", fmt::format("{}: expected f32, f16, bf16 or q8_0", tensor_type_name(dt)));
    DeepseekConfig c;
    c.n_layer = o.n_layer;
    c.n_ctx_train = o.n_ctx;
    c.n_embd = o.n_embd;
    c.n_ff = o.n_ff;
    c.n_head = o.n_head;
    c.n_head_kv = 1;
    c.q_lora_rank = o.q_lora_rank;
    c.kv_lora_rank = o.kv_lora_rank;
    c.key_length = o.kv_lora_rank + o.n_rot;
    c.value_length = o.kv_lora_rank;
    c.head_dim_k = o.head_dim_nope + o.n_rot;
    c.head_dim_v = o.head_dim_v;
    c.n_rot = o.n_rot;
    c.n_layer_dense_lead = o.n_layer_dense_lead;
    c.n_expert = o.n_expert;
    c.n_expert_used = o.n_expert_used;
    c.n_expert_shared = o.n_expert_shared;
    c.n_ff_exp = o.n_ff_exp;
    c.n_expert_groups = o.n_expert_groups;
    c.n_group_used = o.n_group_used;
    c.expert_weights_scale = o.expert_weights_scale;
    c.expert_weights_norm = true;
    c.gating = ExpertGating::sigmoid;
    c.has_expert_bias = true;
    c.rms_eps = 1e-6f;
    c.rope_freq_base = o.rope_freq_base;
    c.rope_scaling_type = "yarn";
    c.rope_scaling_factor = o.rope_scaling_factor;
    c.rope_orig_ctx = o.rope_orig_ctx;
    c.yarn_log_mul = 1.0f;  // mscale_all_dim 1, as R1 and Kimi K2
    c.n_vocab = o.n_vocab;
    c.tokenizer_model = "none";
    check_dense_blocks(c, dt);
    return c;
}

namespace {

// The keys convert_hf_to_gguf.py writes for DeepseekV3ForCausalLM (and what llama.cpp's
// "none" vocabulary needs instead of a tokenizer).
void write_metadata(GgufWriter& w, const DeepseekConfig& c, const SyntheticDeepseekOptions& o)
{
    auto k = [](std::string_view suffix) { return fmt::format("{}.{}", kDeepseekArch, suffix); };
    w.set_string("general.architecture", kDeepseekArch);
    w.set_string("general.name", fmt::format("jal synthetic deepseek2{}{} seed {}",
                                             o.preset.empty() ? "" : " ", o.preset, o.seed));
    w.set_u32(k("block_count"), c.n_layer);
    w.set_u32(k("context_length"), c.n_ctx_train);
    w.set_u32(k("embedding_length"), c.n_embd);
    w.set_u32(k("feed_forward_length"), c.n_ff);
    w.set_u32(k("attention.head_count"), c.n_head);
    w.set_u32(k("attention.head_count_kv"), c.n_head_kv);
    w.set_string(k("rope.scaling.type"), c.rope_scaling_type);
    w.set_f32(k("rope.scaling.factor"), c.rope_scaling_factor);
    w.set_u32(k("rope.scaling.original_context_length"), c.rope_orig_ctx);
    w.set_f32(k("rope.freq_base"), c.rope_freq_base);
    w.set_f32(k("attention.layer_norm_rms_epsilon"), c.rms_eps);
    w.set_u32(k("expert_count"), c.n_expert);
    w.set_u32(k("expert_used_count"), c.n_expert_used);
    w.set_u32(k("expert_group_count"), c.n_expert_groups);
    w.set_u32(k("expert_group_used_count"), c.n_group_used);
    w.set_u32(k("expert_gating_func"), static_cast<uint32_t>(c.gating));
    w.set_u32(k("leading_dense_block_count"), c.n_layer_dense_lead);
    w.set_u32(k("vocab_size"), c.n_vocab);
    if (c.q_lora_rank > 0) w.set_u32(k("attention.q_lora_rank"), c.q_lora_rank);
    w.set_u32(k("attention.kv_lora_rank"), c.kv_lora_rank);
    w.set_u32(k("attention.key_length"), c.key_length);
    w.set_u32(k("attention.value_length"), c.value_length);
    w.set_u32(k("attention.key_length_mla"), c.head_dim_k);
    w.set_u32(k("attention.value_length_mla"), c.head_dim_v);
    w.set_u32(k("expert_feed_forward_length"), c.n_ff_exp);
    w.set_u32(k("expert_shared_count"), c.n_expert_shared);
    w.set_f32(k("expert_weights_scale"), c.expert_weights_scale);
    w.set_bool(k("expert_weights_norm"), c.expert_weights_norm);
    w.set_u32(k("rope.dimension_count"), c.n_rot);
    w.set_f32(k("rope.scaling.yarn_log_multiplier"), 0.1f * c.yarn_log_mul);
    w.set_string("tokenizer.ggml.model", c.tokenizer_model);
    w.set_u64("jal.synthetic.seed", o.seed);
}

}  // namespace

SyntheticDeepseekSummary write_synthetic_deepseek(const std::string& path,
                                                  const SyntheticDeepseekOptions& o,
                                                  const SyntheticProgress& progress)
{
    const DeepseekConfig c = synthetic_deepseek_config(o);
    GgufWriter w;
    write_metadata(w, c, o);
    SyntheticDeepseekSummary summary;
    summary.config = c;
    const std::vector<TensorSpec> specs = deepseek_tensor_specs(c);
    auto how = [&](const TensorSpec& s) { return draw_for(s, c, o.dense_type); };
    summary.parameters = detail::write_synthetic_file(w, path, o.seed, specs, how, progress);
    summary.tensors = specs.size();
    summary.file_bytes = w.file_size();
    return summary;
}

}  // namespace jal::model
