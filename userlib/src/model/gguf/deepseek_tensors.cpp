// The tensors of the DeepSeek-V3 architecture as llama.cpp's deepseek2 loader creates them
// (models/deepseek2.cpp load_arch_tensors), and the published checkpoints' shapes.
#include <jal/model/deepseek_config.hpp>

#include "config_checks.hpp"

#include <fmt/format.h>

namespace jal::model {

namespace {

void attention_specs(std::vector<TensorSpec>& s, const DeepseekConfig& c, uint32_t i)
{
    auto n = [i](std::string_view what) { return fmt::format("blk.{}.{}", i, what); };
    const auto& m = detail::matrix_types();
    const auto& f32 = detail::f32_only();
    const uint64_t e = c.n_embd, h = c.n_head, qr = c.q_lora_rank, kvr = c.kv_lora_rank;
    s.push_back({n("attn_norm.weight"), {e}, f32});
    if (qr > 0) s.push_back({n("attn_q_a_norm.weight"), {qr}, f32});
    s.push_back({n("attn_kv_a_norm.weight"), {kvr}, f32});
    if (qr > 0) {
        s.push_back({n("attn_q_a.weight"), {e, qr}, m});
        s.push_back({n("attn_q_b.weight"), {qr, h * c.head_dim_k}, m});
    } else {
        s.push_back({n("attn_q.weight"), {e, h * c.head_dim_k}, m});
    }
    s.push_back({n("attn_kv_a_mqa.weight"), {e, kvr + c.n_rot}, m});
    // k_b is kv_b's key half transposed per head (q_nope -> latent); v_b its value half
    // (latent -> v): convert_hf_to_gguf.py splits kv_b_proj so for the absorbed form.
    s.push_back({n("attn_k_b.weight"), {c.head_dim_nope(), kvr, h}, m});
    s.push_back({n("attn_v_b.weight"), {kvr, c.head_dim_v, h}, m});
    s.push_back({n("attn_output.weight"), {h * c.head_dim_v, e}, m});
    s.push_back({n("ffn_norm.weight"), {e}, f32});
}

void ffn_specs(std::vector<TensorSpec>& s, const DeepseekConfig& c, uint32_t i)
{
    auto n = [i](std::string_view what) { return fmt::format("blk.{}.{}", i, what); };
    const auto& m = detail::matrix_types();
    const uint64_t e = c.n_embd, x = c.n_expert, fx = c.n_ff_exp,
                   fs = uint64_t{c.n_ff_exp} * c.n_expert_shared;
    if (c.layer_is_dense(i)) {
        s.push_back({n("ffn_gate.weight"), {e, c.n_ff}, m});
        s.push_back({n("ffn_down.weight"), {c.n_ff, e}, m});
        s.push_back({n("ffn_up.weight"), {e, c.n_ff}, m});
        return;
    }
    s.push_back({n("ffn_gate_inp.weight"), {e, x}, m});
    if (c.has_expert_bias) s.push_back({n("exp_probs_b.bias"), {x}, detail::f32_only()});
    s.push_back({n("ffn_down_exps.weight"), {fx, e, x}, m});
    s.push_back({n("ffn_gate_exps.weight"), {e, fx, x}, m});
    s.push_back({n("ffn_up_exps.weight"), {e, fx, x}, m});
    s.push_back({n("ffn_gate_shexp.weight"), {e, fs}, m});
    s.push_back({n("ffn_down_shexp.weight"), {fs, e}, m});
    s.push_back({n("ffn_up_shexp.weight"), {e, fs}, m});
}

}  // namespace

std::vector<TensorSpec> deepseek_tensor_specs(const DeepseekConfig& c)
{
    const uint64_t e = c.n_embd, v = c.n_vocab;
    std::vector<TensorSpec> s;
    s.push_back({"token_embd.weight", {e, v}, detail::matrix_types()});
    s.push_back({"output_norm.weight", {e}, detail::f32_only()});
    if (!c.tied_output) s.push_back({"output.weight", {e, v}, detail::matrix_types()});
    for (uint32_t i = 0; i < c.n_layer; ++i) {
        attention_specs(s, c, i);
        ffn_specs(s, c, i);
    }
    return s;
}

namespace {

// What DeepSeek V3/R1 and Kimi K2 share (config.json: hidden 7168, 61 layers, MLA with
// q_lora_rank 1536, kv_lora_rank 512, 128 + 64 query/key and 128 value dims per head; 8 of
// the routed experts 2048 wide, one shared expert, sigmoid scores with the correction bias,
// normalised; dense FFN 18432; YaRN over a 4096-token original context, mscale_all_dim 1).
DeepseekConfig v3_shape()
{
    DeepseekConfig c;
    c.n_layer = 61;
    c.n_embd = 7168;
    c.n_ff = 18432;
    c.n_head_kv = 1;
    c.q_lora_rank = 1536;
    c.kv_lora_rank = 512;
    c.n_rot = 64;
    c.key_length = 512 + 64;
    c.value_length = 512;
    c.head_dim_k = 128 + 64;
    c.head_dim_v = 128;
    c.n_expert_used = 8;
    c.n_expert_shared = 1;
    c.n_ff_exp = 2048;
    c.expert_weights_norm = true;
    c.gating = ExpertGating::sigmoid;
    c.has_expert_bias = true;
    c.rope_scaling_type = "yarn";
    c.rope_orig_ctx = 4096;
    c.yarn_log_mul = 1.0f;
    c.rms_eps = 1e-6f;
    c.tokenizer_model = "gpt2";
    return c;
}

}  // namespace

std::optional<DeepseekConfig> published_deepseek_config(std::string_view name)
{
    DeepseekConfig c = v3_shape();
    if (name == "deepseek-r1") {
        // deepseek-ai/DeepSeek-R1 (the DeepSeek-V3 shape): 256 experts in 8 groups, 4 kept.
        c.n_ctx_train = 163840;
        c.n_head = 128;
        c.n_layer_dense_lead = 3;
        c.n_expert = 256;
        c.n_expert_groups = 8;
        c.n_group_used = 4;
        c.expert_weights_scale = 2.5f;
        c.rope_freq_base = 10000.0f;
        c.rope_scaling_factor = 40.0f;
        c.n_vocab = 129280;
    } else if (name == "kimi-k2.5") {
        // moonshotai/Kimi-K2.5's language model (Kimi K2's shape, 256k context): 384 experts,
        // no groups (n_group 1), half the heads of V3, one dense layer.
        c.n_ctx_train = 262144;
        c.n_head = 64;
        c.n_layer_dense_lead = 1;
        c.n_expert = 384;
        c.n_expert_groups = 1;
        c.n_group_used = 1;
        c.expert_weights_scale = 2.827f;
        c.rope_freq_base = 50000.0f;
        c.rope_scaling_factor = 64.0f;
        c.n_vocab = 163840;
    } else {
        return std::nullopt;
    }
    return c;
}

}  // namespace jal::model
