// GPT-OSS hyper-parameters and tensors: what llama.cpp's gpt-oss loader needs, with precise
// errors for every missing or inconsistent key and tensor.
#include <limits>

#include <gtest/gtest.h>

#include "gguf_test_util.hpp"

namespace jal::model::test {
namespace {

GptOssConfig read(const GptOssEdits& edits)
{
    return read_gpt_oss_config(
        GgufFile::from_bytes(gpt_oss_bytes(micro_options(), edits), "m.gguf"));
}

TEST(GptOssConfig, ReadsEveryHyperParameter)
{
    const GptOssConfig c = read({});
    EXPECT_EQ(c.n_layer, 1u);
    EXPECT_EQ(c.n_embd, 32u);
    EXPECT_EQ(c.n_head, 2u);
    EXPECT_EQ(c.n_head_kv, 1u);
    EXPECT_EQ(c.head_dim, 16u);
    EXPECT_EQ(c.head_dim_v, 16u);
    EXPECT_EQ(c.n_rot, 16u);
    EXPECT_EQ(c.n_expert, 2u);
    EXPECT_EQ(c.n_expert_used, 1u);
    EXPECT_EQ(c.n_ff_exp, 32u);
    EXPECT_EQ(c.n_vocab, 8u);
    EXPECT_EQ(c.n_ctx_train, 131072u);
    EXPECT_EQ(c.sliding_window, 4u);
    EXPECT_EQ(c.swa_period, 2u);
    EXPECT_FLOAT_EQ(c.rms_eps, 1e-5f);
    EXPECT_FLOAT_EQ(c.rope_freq_base, 150000.0f);
    EXPECT_FLOAT_EQ(c.rope_freq_base_swa, 150000.0f);
    EXPECT_EQ(c.rope_scaling_type, "linear");  // this file has no rope.scaling keys
    EXPECT_EQ(c.rope_orig_ctx, 131072u);
    EXPECT_FLOAT_EQ(c.yarn_beta_fast, 32.0f);
    EXPECT_FLOAT_EQ(c.yarn_beta_slow, 1.0f);
    EXPECT_EQ(c.tokenizer_model, "none");
    EXPECT_TRUE(c.layer_uses_swa(0));
    EXPECT_FALSE(c.layer_uses_swa(1));
    EXPECT_TRUE(c.layer_uses_swa(2));
    EXPECT_EQ(gpt_oss_tensor_specs(c).size(), 3u + 19u * c.n_layer);
}

TEST(GptOssConfig, MissingKeys)
{
    for (const char* key :
         {"gpt-oss.context_length", "gpt-oss.embedding_length", "gpt-oss.block_count",
          "gpt-oss.attention.head_count", "gpt-oss.attention.layer_norm_rms_epsilon",
          "gpt-oss.expert_feed_forward_length", "gpt-oss.attention.sliding_window",
          "gpt-oss.expert_count", "gpt-oss.expert_used_count", "general.architecture",
          "tokenizer.ggml.model"}) {
        SCOPED_TRACE(key);
        GptOssEdits e;
        e.drop_key = key;
        expect_error([&] { read(e); }, JAL_STATUS_INVALID_FIELD,
                     {"m.gguf: missing key '" + std::string(key) + "'"});
    }
    GptOssEdits vocab;
    vocab.drop_key = "gpt-oss.vocab_size";
    expect_error([&] { read(vocab); }, JAL_STATUS_INVALID_FIELD,
                 {"tokenizer 'none' needs gpt-oss.vocab_size = 8 (the rows of token_embd.weight), "
                  "found none"});
}

TEST(GptOssConfig, WrongKeyTypesAndValues)
{
    GptOssEdits type;
    type.string_key = "gpt-oss.block_count";
    expect_error([&] { read(type); }, JAL_STATUS_INVALID_FIELD,
                 {"key 'gpt-oss.block_count' at offset",
                  "expected an unsigned 32-bit integer, found string"});
    GptOssEdits eps;
    eps.string_key = "gpt-oss.attention.layer_norm_rms_epsilon";
    expect_error([&] { read(eps); }, JAL_STATUS_INVALID_FIELD,
                 {"layer_norm_rms_epsilon", "expected f32, found string"});

    GptOssEdits arch;
    arch.architecture = "llama";
    expect_error(
        [&] { read(arch); }, JAL_STATUS_INVALID_FIELD,
        {"key 'general.architecture' at offset 24: architecture 'llama', expected 'gpt-oss'"});
    arch.architecture = "deepseek2";  // read elsewhere: says where
    expect_error([&] { read(arch); }, JAL_STATUS_INVALID_FIELD,
                 {"architecture 'deepseek2', expected 'gpt-oss' (DeepSeek-V3 models are read and "
                  "checked but not run on the chip yet: docs/deepseek.md)"});

    auto replaced = [](const std::string& key, uint32_t value) {
        GptOssEdits e;
        e.drop_key = key;
        e.extra_keys = [key, value](GgufWriter& w) { w.set_u32(key, value); };
        return e;
    };
    expect_error([&] { read(replaced("gpt-oss.attention.head_count_kv", 3)); },
                 JAL_STATUS_INVALID_FIELD,
                 {"key 'gpt-oss.attention.head_count_kv'",
                  "head_count_kv 3, expected a divisor of head_count 2"});
    expect_error([&] { read(replaced("gpt-oss.expert_used_count", 3)); }, JAL_STATUS_INVALID_FIELD,
                 {"expert_used_count 3, expected 1..expert_count (2)"});
    expect_error([&] { read(replaced("gpt-oss.block_count", 0)); }, JAL_STATUS_INVALID_FIELD,
                 {"block_count 0, expected 1..512"});
    expect_error([&] { read(replaced("gpt-oss.attention.key_length", 15)); },
                 JAL_STATUS_INVALID_FIELD, {"key_length 15, expected a positive even number"});
    expect_error([&] { read(replaced("gpt-oss.attention.sliding_window", 0)); },
                 JAL_STATUS_INVALID_FIELD, {"sliding_window 0"});
    expect_error([&] { read(replaced("gpt-oss.vocab_size", 9)); }, JAL_STATUS_INVALID_FIELD,
                 {"key 'gpt-oss.vocab_size'", "= 8", "found 9"});
    // A block count the tensors do not have: the first missing tensor is named.
    expect_error([&] { read(replaced("gpt-oss.block_count", 2)); }, JAL_STATUS_INVALID_FIELD,
                 {"missing tensor 'blk.1.attn_norm.weight' (expected shape [32], f32)"});
    // Real-valued keys must be finite numbers: NaN and infinity are refused where they are
    // read, not found later as NaN logits.
    auto f32_key = [](const std::string& key, float value) {
        GptOssEdits e;
        e.drop_key = key;
        e.extra_keys = [key, value](GgufWriter& w) { w.set_f32(key, value); };
        return e;
    };
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    expect_error([&] { read(f32_key("gpt-oss.rope.scaling.factor", nan)); },
                 JAL_STATUS_INVALID_FIELD,
                 {"key 'gpt-oss.rope.scaling.factor'", "expected a finite value >= 0"});
    expect_error([&] { read(f32_key("gpt-oss.rope.scaling.factor", inf)); },
                 JAL_STATUS_INVALID_FIELD, {"rope.scaling.factor inf"});
    expect_error([&] { read(f32_key("gpt-oss.rope.freq_base", inf)); }, JAL_STATUS_INVALID_FIELD,
                 {"key 'gpt-oss.rope.freq_base'", "expected a finite number"});
    for (const char* key :
         {"gpt-oss.rope.scaling.yarn_beta_fast", "gpt-oss.rope.scaling.yarn_beta_slow",
          "gpt-oss.rope.scaling.attn_factor", "gpt-oss.expert_weights_scale"}) {
        SCOPED_TRACE(key);
        expect_error([&] { read(f32_key(key, nan)); }, JAL_STATUS_INVALID_FIELD,
                     {"key '" + std::string(key) + "'", "nan, expected a finite number"});
    }
    expect_error([&] { read(f32_key("gpt-oss.attention.layer_norm_rms_epsilon", nan)); },
                 JAL_STATUS_INVALID_FIELD, {"layer_norm_rms_epsilon nan, expected in (0, 1)"});

    GptOssEdits scaling;
    scaling.extra_keys = [](GgufWriter& w) { w.set_string("gpt-oss.rope.scaling.type", "ntk"); };
    expect_error([&] { read(scaling); }, JAL_STATUS_INVALID_FIELD,
                 {"rope.scaling.type 'ntk', expected none, linear or yarn"});
}

TEST(GptOssConfig, MissingTensors)
{
    for (const char* name :
         {"token_embd.weight", "blk.0.attn_sinks.weight", "blk.0.ffn_up_exps.weight",
          "blk.0.attn_q.bias", "blk.0.ffn_down_exps.bias", "output_norm.weight", "output.weight"}) {
        SCOPED_TRACE(name);
        GptOssEdits e;
        e.drop_tensor = name;
        expect_error([&] { read(e); }, JAL_STATUS_INVALID_FIELD,
                     {"m.gguf: missing tensor '" + std::string(name) + "'"});
    }
    GptOssEdits experts;
    experts.drop_tensor = "blk.0.ffn_gate_exps.weight";
    expect_error([&] { read(experts); }, JAL_STATUS_INVALID_FIELD,
                 {"missing tensor 'blk.0.ffn_gate_exps.weight' (expected shape [32, 32, 2])"});
}

TEST(GptOssConfig, WrongTensorTypesAndShapes)
{
    GptOssEdits sinks;
    sinks.retype_tensor = "blk.0.attn_sinks.weight";
    expect_error([&] { read(sinks); }, JAL_STATUS_INVALID_FIELD,
                 {"tensor 'blk.0.attn_sinks.weight' at offset", "type f16, expected f32"});
    GptOssEdits f16_matrix;  // any type the CPU multiplies is fine for a weight matrix
    f16_matrix.retype_tensor = "blk.0.attn_q.weight";
    EXPECT_NO_THROW(read(f16_matrix));

    GptOssEdits q;
    q.reshape_tensor = "blk.0.attn_q.weight";
    expect_error([&] { read(q); }, JAL_STATUS_INVALID_FIELD,
                 {"tensor 'blk.0.attn_q.weight' at offset", "shape [64, 32], expected [32, 32]"});
    GptOssEdits down;
    down.reshape_tensor = "blk.0.ffn_down_exps.weight";
    expect_error([&] { read(down); }, JAL_STATUS_INVALID_FIELD,
                 {"shape [64, 32, 2], expected [32, 32, 2]"});
    GptOssEdits out;
    out.reshape_tensor = "output.weight";
    expect_error([&] { read(out); }, JAL_STATUS_INVALID_FIELD,
                 {"'output.weight'", "shape [64, 8], expected [32, 8]"});
    GptOssEdits extra;
    extra.extra_tensor = "blk.0.attn_qkv.weight";
    expect_error(
        [&] { read(extra); }, JAL_STATUS_INVALID_FIELD,
        {"tensor 'blk.0.attn_qkv.weight' at offset", "not part of the gpt-oss architecture"});
}

TEST(GptOssConfig, PublishedShapes)
{
    const auto big = published_gpt_oss_config("gpt-oss-120b");
    const auto small = published_gpt_oss_config("gpt-oss-20b");
    ASSERT_TRUE(big && small);
    EXPECT_EQ(big->n_layer, 36u);
    EXPECT_EQ(big->n_expert, 128u);
    EXPECT_EQ(small->n_layer, 24u);
    EXPECT_EQ(small->n_expert, 32u);
    EXPECT_EQ(big->n_expert_used, 4u);
    EXPECT_EQ(big->n_head * big->head_dim, 4096u);  // wider than the 2880 residual stream
    // Parameters: about 117 B and 21 B (the published totals).
    auto params = [](const GptOssConfig& c) {
        uint64_t n = 0;
        for (const TensorSpec& s : gpt_oss_tensor_specs(c)) {
            uint64_t e = 1;
            for (uint64_t d : s.ne) e *= d;
            n += e;
        }
        return n;
    };
    EXPECT_NEAR(params(*big) / 1e9, 116.8, 0.5);
    EXPECT_NEAR(params(*small) / 1e9, 20.9, 0.5);
    EXPECT_FALSE(published_gpt_oss_config("gpt-oss-7b"));
}

}  // namespace
}  // namespace jal::model::test
