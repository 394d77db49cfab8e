// DeepSeek-V3-architecture hyper-parameters and tensors: what llama.cpp's deepseek2 loader
// needs, with precise errors for every missing or inconsistent key and tensor; the
// published R1 and Kimi K2.5 shapes.
#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "deepseek_test_util.hpp"

namespace jal::model::test {
namespace {

DeepseekConfig read(const DeepseekEdits& edits)
{
    return read_deepseek_config(
        GgufFile::from_bytes(deepseek_bytes(deepseek_micro_options(), edits), "m.gguf"));
}

DeepseekEdits with_u32(const std::string& key, uint32_t v)
{
    DeepseekEdits e;
    e.u32_values[key] = v;
    return e;
}

TEST(DeepseekConfig, ReadsEveryHyperParameter)
{
    const DeepseekConfig c = read({});
    EXPECT_EQ(c.n_layer, 2u);
    EXPECT_EQ(c.n_embd, 32u);
    EXPECT_EQ(c.n_ff, 48u);
    EXPECT_EQ(c.n_head, 2u);
    EXPECT_EQ(c.n_head_kv, 1u);
    EXPECT_EQ(c.q_lora_rank, 16u);
    EXPECT_EQ(c.kv_lora_rank, 16u);
    EXPECT_EQ(c.key_length, 24u);  // the cached latent + RoPE key
    EXPECT_EQ(c.value_length, 16u);
    EXPECT_EQ(c.head_dim_k, 16u);
    EXPECT_EQ(c.head_dim_v, 8u);
    EXPECT_EQ(c.n_rot, 8u);
    EXPECT_EQ(c.head_dim_nope(), 8u);
    EXPECT_EQ(c.n_layer_dense_lead, 1u);
    EXPECT_TRUE(c.layer_is_dense(0));
    EXPECT_FALSE(c.layer_is_dense(1));
    EXPECT_EQ(c.n_expert, 4u);
    EXPECT_EQ(c.n_expert_used, 2u);
    EXPECT_EQ(c.n_expert_shared, 1u);
    EXPECT_EQ(c.n_ff_exp, 32u);
    EXPECT_EQ(c.n_expert_groups, 2u);
    EXPECT_EQ(c.n_group_used, 1u);
    EXPECT_TRUE(c.grouped());
    EXPECT_FLOAT_EQ(c.expert_weights_scale, 2.5f);
    EXPECT_TRUE(c.expert_weights_norm);
    EXPECT_EQ(c.gating, ExpertGating::sigmoid);
    EXPECT_TRUE(c.has_expert_bias);
    EXPECT_FLOAT_EQ(c.rms_eps, 1e-6f);
    EXPECT_FLOAT_EQ(c.rope_freq_base, 10000.0f);
    EXPECT_EQ(c.rope_scaling_type, "yarn");
    EXPECT_FLOAT_EQ(c.rope_scaling_factor, 40.0f);
    EXPECT_EQ(c.rope_orig_ctx, 4096u);
    EXPECT_FLOAT_EQ(c.yarn_log_mul, 1.0f);  // 0.1 in the file: llama.cpp divides by 0.1
    EXPECT_FLOAT_EQ(c.yarn_beta_fast, 32.0f);
    EXPECT_FLOAT_EQ(c.yarn_beta_slow, 1.0f);
    EXPECT_EQ(c.n_vocab, 8u);
    EXPECT_FALSE(c.tied_output);
    EXPECT_EQ(c.tokenizer_model, "none");
    // 3 global; per layer 10 for attention and the norms, then 3 dense or 8 MoE (with the
    // bias).
    EXPECT_EQ(deepseek_tensor_specs(c).size(), 3u + (10 + 3) + (10 + 8));
}

TEST(DeepseekConfig, DefaultsOfOptionalKeys)
{
    DeepseekEdits e;
    for (const char* k : {"deepseek2.expert_gating_func", "deepseek2.expert_weights_norm",
                          "deepseek2.expert_weights_scale", "deepseek2.rope.scaling.type",
                          "deepseek2.rope.scaling.yarn_log_multiplier"}) {
        SCOPED_TRACE(k);
        e.drop_key = k;
        const DeepseekConfig c = read(e);
        const std::string k2 = k;
        if (k2 == "deepseek2.expert_gating_func") {
            EXPECT_EQ(c.gating, ExpertGating::softmax);  // DeepSeek V2's files have none
        } else if (k2 == "deepseek2.expert_weights_norm") {
            EXPECT_FALSE(c.expert_weights_norm);
        } else if (k2 == "deepseek2.expert_weights_scale") {
            EXPECT_EQ(c.expert_weights_scale, 0.0f);
        } else if (k2 == "deepseek2.rope.scaling.type") {
            EXPECT_EQ(c.rope_scaling_type, "linear");
        } else {
            EXPECT_EQ(c.yarn_log_mul, 0.0f);
        }
    }
}

TEST(DeepseekConfig, MissingKeys)
{
    for (const char* key :
         {"deepseek2.context_length", "deepseek2.embedding_length", "deepseek2.block_count",
          "deepseek2.attention.head_count", "deepseek2.attention.layer_norm_rms_epsilon",
          "deepseek2.attention.q_lora_rank", "deepseek2.attention.kv_lora_rank",
          "deepseek2.expert_feed_forward_length", "deepseek2.expert_shared_count",
          "general.architecture", "tokenizer.ggml.model"}) {
        SCOPED_TRACE(key);
        DeepseekEdits e;
        e.drop_key = key;
        expect_error([&] { read(e); }, JAL_STATUS_INVALID_FIELD,
                     {"m.gguf: missing key '" + std::string(key) + "'"});
    }
    DeepseekEdits mla;  // the older unsplit attn_kv_b form
    mla.drop_key = "deepseek2.attention.value_length_mla";
    expect_error([&] { read(mla); }, JAL_STATUS_INVALID_FIELD,
                 {"an older GGUF with the unsplit attn_kv_b tensor"});
    DeepseekEdits vocab;
    vocab.drop_key = "deepseek2.vocab_size";
    expect_error([&] { read(vocab); }, JAL_STATUS_INVALID_FIELD,
                 {"tokenizer 'none' needs deepseek2.vocab_size = 8"});
    DeepseekEdits ff;  // the dense leading layer needs its width
    ff.drop_key = "deepseek2.feed_forward_length";
    expect_error([&] { read(ff); }, JAL_STATUS_INVALID_FIELD,
                 {"1 leading dense layers need feed_forward_length"});
}

TEST(DeepseekConfig, InconsistentAttentionKeys)
{
    const std::pair<DeepseekEdits, std::string> cases[] = {
        {with_u32("deepseek2.attention.head_count_kv", 2),
         "head_count_kv 2, expected 1 (MLA is stored as one latent KV head)"},
        {with_u32("deepseek2.attention.key_length", 16),
         "key_length 16, expected kv_lora_rank + rope.dimension_count = 24"},
        {with_u32("deepseek2.attention.value_length", 24),
         "value_length 24, expected kv_lora_rank 16"},
        {with_u32("deepseek2.attention.key_length_mla", 8),
         "key_length_mla 8, expected more than rope.dimension_count 8"},
        {with_u32("deepseek2.rope.dimension_count", 7),
         "rope.dimension_count 7, expected a positive even number"},
    };
    for (const auto& [e, msg] : cases) {
        SCOPED_TRACE(msg);
        expect_error([&] { read(e); }, JAL_STATUS_INVALID_FIELD, {"at offset", msg});
    }
    DeepseekEdits temp;
    temp.f32_values["deepseek2.attention.temperature_scale"] = 0.1f;
    expect_error([&] { read(temp); }, JAL_STATUS_INVALID_FIELD,
                 {"attention temperature tuning (Mistral Large) is not supported"});
    DeepseekEdits eps;
    eps.f32_values["deepseek2.attention.layer_norm_rms_epsilon"] = 0.0f;
    expect_error([&] { read(eps); }, JAL_STATUS_INVALID_FIELD,
                 {"layer_norm_rms_epsilon 0, expected in (0, 1)"});
}

TEST(DeepseekConfig, InconsistentExpertKeys)
{
    const std::pair<DeepseekEdits, std::string> cases[] = {
        {with_u32("deepseek2.expert_group_count", 3),
         "expert_group_count 3, expected a divisor of expert_count 4"},
        {with_u32("deepseek2.expert_group_count", 4),
         "expert_group_count 4, expected fewer than expert_count 4"},
        {with_u32("deepseek2.expert_group_used_count", 2),
         "expert_group_used_count 2, expected 1..1"},
        {with_u32("deepseek2.expert_used_count", 3),
         "expert_used_count 3, more than the 2 experts of the 1 groups kept"},
        {with_u32("deepseek2.expert_used_count", 5),
         "expert_used_count 5, expected 1..expert_count"},
        {with_u32("deepseek2.leading_dense_block_count", 3),
         "leading_dense_block_count 3, expected at most block_count 2"},
        {with_u32("deepseek2.expert_shared_count", 0), "expert_shared_count 0"},
        {with_u32("deepseek2.expert_gating_func", 4),
         "expert_gating_func 4, expected 1 (softmax) or 2 (sigmoid)"},
        {with_u32("deepseek2.nextn_predict_layers", 1),
         "multi-token-prediction layers are not supported"},
    };
    for (const auto& [e, msg] : cases) {
        SCOPED_TRACE(msg);
        expect_error([&] { read(e); }, JAL_STATUS_INVALID_FIELD, {"at offset", msg});
    }
    DeepseekEdits scale;
    scale.f32_values["deepseek2.expert_weights_scale"] = std::numeric_limits<float>::quiet_NaN();
    expect_error([&] { read(scale); }, JAL_STATUS_INVALID_FIELD,
                 {"expert_weights_scale nan, expected a finite value >= 0"});
    DeepseekEdits type;
    type.string_key = "deepseek2.expert_shared_count";
    expect_error([&] { read(type); }, JAL_STATUS_INVALID_FIELD,
                 {"key 'deepseek2.expert_shared_count' at offset",
                  "expected an unsigned 32-bit integer, found string"});
    DeepseekEdits arch;
    arch.architecture = "gpt-oss";
    expect_error([&] { read(arch); }, JAL_STATUS_INVALID_FIELD,
                 {"architecture 'gpt-oss', expected 'deepseek2'"});
}

TEST(DeepseekConfig, MissingAndWrongTensors)
{
    for (const char* name :
         {"blk.0.attn_k_b.weight", "blk.1.attn_v_b.weight", "blk.0.attn_q_a_norm.weight",
          "blk.0.ffn_gate.weight", "blk.1.ffn_up_shexp.weight", "blk.1.ffn_down_exps.weight",
          "output_norm.weight"}) {
        SCOPED_TRACE(name);
        DeepseekEdits e;
        e.drop_tensor = name;
        expect_error([&] { read(e); }, JAL_STATUS_INVALID_FIELD,
                     {"m.gguf: missing tensor '" + std::string(name) + "'"});
    }
    DeepseekEdits kb;  // k_b is [nope, kv_lora_rank, heads]
    kb.reshape_tensor = "blk.1.attn_k_b.weight";
    expect_error(
        [&] { read(kb); }, JAL_STATUS_INVALID_FIELD,
        {"tensor 'blk.1.attn_k_b.weight' at offset", "shape [40, 16, 2], expected [8, 16, 2]"});
    DeepseekEdits norm;
    norm.retype_tensor = "blk.1.attn_kv_a_norm.weight";
    expect_error([&] { read(norm); }, JAL_STATUS_INVALID_FIELD, {"type f16, expected f32"});
    DeepseekEdits legacy;  // the unsplit form beside the split one
    legacy.extra_tensor = "blk.1.attn_kv_b.weight";
    expect_error(
        [&] { read(legacy); }, JAL_STATUS_INVALID_FIELD,
        {"tensor 'blk.1.attn_kv_b.weight' at offset", "not part of the deepseek2 architecture"});
}

TEST(DeepseekConfig, OptionalTensors)
{
    DeepseekEdits tied;  // no output.weight: the LM head is token_embd, as llama.cpp does
    tied.drop_tensor = "output.weight";
    const DeepseekConfig t = read(tied);
    EXPECT_TRUE(t.tied_output);
    DeepseekEdits no_bias;  // DeepSeek V2 has no correction bias
    no_bias.drop_tensor = "blk.1.exp_probs_b.bias";
    EXPECT_FALSE(read(no_bias).has_expert_bias);

    // With three layers, one MoE layer having the bias and the other not is refused.
    SyntheticDeepseekOptions o = deepseek_micro_options();
    o.n_layer = 3;
    DeepseekEdits partial;
    partial.drop_tensor = "blk.2.exp_probs_b.bias";
    expect_error(
        [&] { read_deepseek_config(GgufFile::from_bytes(deepseek_bytes(o, partial), "m.gguf")); },
        JAL_STATUS_INVALID_FIELD, {"missing tensor 'blk.2.exp_probs_b.bias'"});
}

TEST(DeepseekConfig, LiteModelsProjectQueriesDirectly)
{
    // llama.cpp's "lite" layer counts (DeepSeek-V2-Lite: 27) have no q LoRA: attn_q.
    SyntheticDeepseekOptions o = deepseek_micro_options();
    o.n_layer = 27;
    o.q_lora_rank = 0;
    DeepseekEdits e;
    e.drop_key = "deepseek2.attention.q_lora_rank";
    const DeepseekConfig c =
        read_deepseek_config(GgufFile::from_bytes(deepseek_bytes(o, e), "m.gguf"));
    EXPECT_EQ(c.q_lora_rank, 0u);
    EXPECT_TRUE(GgufFile::from_bytes(deepseek_bytes(o, e)).find_tensor("blk.0.attn_q.weight"));
    // Any other layer count needs the key.
    o.n_layer = 28, o.q_lora_rank = 16;
    expect_error(
        [&] { read_deepseek_config(GgufFile::from_bytes(deepseek_bytes(o, e), "m.gguf")); },
        JAL_STATUS_INVALID_FIELD, {"missing key 'deepseek2.attention.q_lora_rank'"});
}

TEST(DeepseekConfig, PublishedShapes)
{
    const auto r1 = published_deepseek_config("deepseek-r1");
    const auto kimi = published_deepseek_config("kimi-k2.5");
    ASSERT_TRUE(r1 && kimi);
    EXPECT_EQ(r1->n_expert, 256u);
    EXPECT_TRUE(r1->grouped());
    EXPECT_EQ(r1->n_layer_dense_lead, 3u);
    EXPECT_EQ(kimi->n_expert, 384u);
    EXPECT_FALSE(kimi->grouped());
    EXPECT_EQ(kimi->n_layer_dense_lead, 1u);
    EXPECT_EQ(r1->key_length, 576u);  // the cached latent + RoPE key
    EXPECT_EQ(r1->head_dim_k, 192u);
    auto params = [](const DeepseekConfig& c) {
        uint64_t n = 0;
        for (const TensorSpec& s : deepseek_tensor_specs(c)) {
            uint64_t e = 1;
            for (uint64_t d : s.ne) e *= d;
            n += e;
        }
        return n;
    };
    // The published totals without the multi-token-prediction layer: 671 B and 1.04 T.
    EXPECT_NEAR(params(*r1) / 1e9, 671.0, 1.0);
    EXPECT_NEAR(params(*kimi) / 1e9, 1026.0, 20.0);
    EXPECT_FALSE(published_deepseek_config("deepseek-v2"));
}

}  // namespace
}  // namespace jal::model::test
