#include "deepseek_test_util.hpp"

#include <set>

namespace jal::model::test {

SyntheticDeepseekOptions deepseek_micro_options()
{
    SyntheticDeepseekOptions o;
    o.n_layer = 2, o.n_embd = 32, o.n_head = 2, o.q_lora_rank = 16, o.kv_lora_rank = 16;
    o.head_dim_nope = 8, o.n_rot = 8, o.head_dim_v = 8, o.n_layer_dense_lead = 1, o.n_ff = 48;
    o.n_expert = 4, o.n_expert_used = 2, o.n_expert_groups = 2, o.n_group_used = 1;
    o.n_ff_exp = 32, o.n_vocab = 8;
    return o;
}

namespace {

// Writes the pairs, applying the edits; `written` collects the keys written.
struct KeyWriter {
    GgufWriter& w;
    const DeepseekEdits& e;
    std::set<std::string> written;

    bool skip(const std::string& key)
    {
        written.insert(key);
        if (key == e.drop_key) return true;
        if (key == e.string_key) {
            w.set_string(key, "oops");
            return true;
        }
        return false;
    }
    void u32(const std::string& key, uint32_t v)
    {
        if (skip(key)) return;
        const auto it = e.u32_values.find(key);
        w.set_u32(key, it == e.u32_values.end() ? v : it->second);
    }
    void f32(const std::string& key, float v)
    {
        if (skip(key)) return;
        const auto it = e.f32_values.find(key);
        w.set_f32(key, it == e.f32_values.end() ? v : it->second);
    }
    void rest()
    {
        for (const auto& [k, v] : e.u32_values)
            if (!written.count(k)) w.set_u32(k, v);
        for (const auto& [k, v] : e.f32_values)
            if (!written.count(k)) w.set_f32(k, v);
    }
};

void write_keys(KeyWriter& k, const DeepseekConfig& c)
{
    const std::string a = "deepseek2.";
    k.u32(a + "context_length", c.n_ctx_train);
    k.u32(a + "embedding_length", c.n_embd);
    k.u32(a + "block_count", c.n_layer);
    k.u32(a + "feed_forward_length", c.n_ff);
    k.u32(a + "attention.head_count", c.n_head);
    k.u32(a + "attention.head_count_kv", 1);
    k.u32(a + "attention.q_lora_rank", c.q_lora_rank);
    k.u32(a + "attention.kv_lora_rank", c.kv_lora_rank);
    k.u32(a + "attention.key_length", c.key_length);
    k.u32(a + "attention.value_length", c.value_length);
    k.u32(a + "attention.key_length_mla", c.head_dim_k);
    k.u32(a + "attention.value_length_mla", c.head_dim_v);
    k.u32(a + "rope.dimension_count", c.n_rot);
    k.f32(a + "attention.layer_norm_rms_epsilon", c.rms_eps);
    k.u32(a + "leading_dense_block_count", c.n_layer_dense_lead);
    k.u32(a + "expert_count", c.n_expert);
    k.u32(a + "expert_used_count", c.n_expert_used);
    k.u32(a + "expert_shared_count", c.n_expert_shared);
    k.u32(a + "expert_feed_forward_length", c.n_ff_exp);
    k.u32(a + "expert_group_count", c.n_expert_groups);
    k.u32(a + "expert_group_used_count", c.n_group_used);
    k.u32(a + "expert_gating_func", 2);
    k.f32(a + "expert_weights_scale", c.expert_weights_scale);
    if (!k.skip(a + "expert_weights_norm")) k.w.set_bool(a + "expert_weights_norm", true);
    k.f32(a + "rope.freq_base", c.rope_freq_base);
    if (!k.skip(a + "rope.scaling.type")) k.w.set_string(a + "rope.scaling.type", "yarn");
    k.f32(a + "rope.scaling.factor", c.rope_scaling_factor);
    k.u32(a + "rope.scaling.original_context_length", c.rope_orig_ctx);
    k.f32(a + "rope.scaling.yarn_log_multiplier", 0.1f);
    if (!k.skip("tokenizer.ggml.model")) k.w.set_string("tokenizer.ggml.model", "none");
    k.u32(a + "vocab_size", c.n_vocab);
    k.rest();
}

}  // namespace

std::vector<std::byte> deepseek_bytes(const SyntheticDeepseekOptions& options,
                                      const DeepseekEdits& e)
{
    const DeepseekConfig c = synthetic_deepseek_config(options);
    GgufWriter w;
    if (e.drop_key != "general.architecture") w.set_string("general.architecture", e.architecture);
    KeyWriter k{w, e, {}};
    write_keys(k, c);
    if (e.extra_keys) e.extra_keys(w);

    const std::set<std::string> dropped(e.drop_tensors.begin(), e.drop_tensors.end());
    for (const TensorSpec& s : deepseek_tensor_specs(c)) {
        if (s.name == e.drop_tensor || dropped.count(s.name)) continue;
        std::vector<uint64_t> ne = s.ne;
        const bool experts = s.name.find("_exps.") != std::string::npos;
        TensorType type = experts ? TensorType::MXFP4 : TensorType::F32;
        if (s.name == e.retype_tensor) type = TensorType::F16;
        if (s.name == e.reshape_tensor) ne[0] += 32;
        w.add_tensor(s.name, type, ne);
    }
    if (!e.extra_tensor.empty()) {
        const uint64_t ne[] = {32};
        w.add_tensor(e.extra_tensor, TensorType::F32, ne);
    }
    return write_to_bytes(w);
}

}  // namespace jal::model::test
