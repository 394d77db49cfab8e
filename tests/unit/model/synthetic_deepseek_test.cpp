// Synthetic DeepSeek-V3 models: the presets have the routing they stand for, the same seed
// gives the same bytes, and the file reads back as the architecture it claims (MXFP4
// routed experts, F32 or --dense-type elsewhere, F32 norms and correction bias).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include <jal/model/synthetic_deepseek.hpp>

#include "deepseek_test_util.hpp"

namespace jal::model::test {
namespace {

std::string temp_path(const std::string& tag)
{
    return ::testing::TempDir() + "synthetic_ds_" + tag + "_" + std::to_string(getpid()) + ".gguf";
}

std::string slurp(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(SyntheticDeepseek, PresetsStandForR1AndKimi)
{
    const auto r1 = synthetic_deepseek_preset("ds-tiny");
    const auto kimi = synthetic_deepseek_preset("kimi-tiny");
    ASSERT_TRUE(r1 && kimi);
    const DeepseekConfig a = synthetic_deepseek_config(*r1);
    const DeepseekConfig b = synthetic_deepseek_config(*kimi);
    // R1: grouped sigmoid routing with the correction bias, routed scaling 2.5.
    EXPECT_TRUE(a.grouped());
    EXPECT_LT(a.n_group_used, a.n_expert_groups);
    EXPECT_FLOAT_EQ(a.expert_weights_scale, 2.5f);
    // Kimi K2: more experts, top-8, no groups, scaling 2.827.
    EXPECT_FALSE(b.grouped());
    EXPECT_EQ(b.n_expert_used, 8u);
    EXPECT_GT(b.n_expert, a.n_expert);
    EXPECT_FLOAT_EQ(b.expert_weights_scale, 2.827f);
    for (const DeepseekConfig* c : {&a, &b}) {
        EXPECT_EQ(c->gating, ExpertGating::sigmoid);
        EXPECT_TRUE(c->has_expert_bias);
        EXPECT_TRUE(c->expert_weights_norm);
        EXPECT_EQ(c->n_expert_shared, 1u);
        EXPECT_GE(c->n_layer_dense_lead, 1u);
        EXPECT_LT(c->n_layer_dense_lead, c->n_layer);
        EXPECT_GT(c->q_lora_rank, 0u);
        EXPECT_EQ(c->rope_scaling_type, "yarn");
    }
    EXPECT_FALSE(synthetic_deepseek_preset("tiny"));
}

TEST(SyntheticDeepseek, RefusesImpossibleShapes)
{
    SyntheticDeepseekOptions o = deepseek_micro_options();
    o.n_expert_groups = 3;
    expect_error([&] { synthetic_deepseek_config(o); }, JAL_STATUS_INVALID_FIELD,
                 {"--expert-groups 3: expected a divisor of --experts 4"});
    o = deepseek_micro_options();
    o.n_expert_used = 3;
    expect_error([&] { synthetic_deepseek_config(o); }, JAL_STATUS_INVALID_FIELD,
                 {"--experts-per-token 3: more than the 2 experts of the 1 groups kept"});
    o = deepseek_micro_options();
    o.n_rot = 7;
    expect_error([&] { synthetic_deepseek_config(o); }, JAL_STATUS_INVALID_FIELD,
                 {"--rope-dim 7: expected a positive even number"});
    o = deepseek_micro_options();
    o.n_layer_dense_lead = 3;
    expect_error([&] { synthetic_deepseek_config(o); }, JAL_STATUS_INVALID_FIELD,
                 {"--dense-layers 3: expected at most --layers 2"});
    o = deepseek_micro_options();
    o.dense_type = TensorType::Q8_0;  // attn_q_b's rows are q_lora_rank = 16 wide
    expect_error([&] { synthetic_deepseek_config(o); }, JAL_STATUS_INVALID_FIELD,
                 {"q8_0 needs the rows of blk.0.attn_q_b.weight (16) a multiple of 32"});
    o.q_lora_rank = 32, o.kv_lora_rank = 32;  // then attn_k_b's (head_dim_nope = 8)
    expect_error([&] { synthetic_deepseek_config(o); }, JAL_STATUS_INVALID_FIELD,
                 {"q8_0 needs the rows of blk.0.attn_k_b.weight (8) a multiple of 32"});
}

TEST(SyntheticDeepseek, WritesWhatItReadsBackDeterministically)
{
    for (const std::string& name : synthetic_deepseek_preset_names()) {
        SCOPED_TRACE(name);
        SyntheticDeepseekOptions o = *synthetic_deepseek_preset(name);
        o.seed = 3;
        o.dense_type = TensorType::BF16;
        const std::string p1 = temp_path(name + "1"), p2 = temp_path(name + "2");
        const auto s = write_synthetic_deepseek(p1, o);
        write_synthetic_deepseek(p2, o);
        EXPECT_EQ(slurp(p1), slurp(p2));
        EXPECT_EQ(s.file_bytes, std::filesystem::file_size(p1));

        const GgufFile f = GgufFile::open(p1);
        const DeepseekConfig c = read_deepseek_config(f);
        EXPECT_EQ(c.n_layer, s.config.n_layer);
        EXPECT_EQ(c.n_expert, s.config.n_expert);
        EXPECT_EQ(c.n_expert_groups, s.config.n_expert_groups);
        EXPECT_EQ(c.head_dim_k, s.config.head_dim_k);
        EXPECT_FLOAT_EQ(c.yarn_log_mul, 1.0f);
        EXPECT_EQ(f.tensor("blk.1.ffn_gate_exps.weight").type, TensorType::MXFP4);
        EXPECT_EQ(f.tensor("blk.1.ffn_gate_shexp.weight").type, TensorType::BF16);
        EXPECT_EQ(f.tensor("blk.1.attn_k_b.weight").type, TensorType::BF16);
        EXPECT_EQ(f.tensor("blk.1.exp_probs_b.bias").type, TensorType::F32);
        EXPECT_EQ(f.tensor("blk.0.attn_q_a_norm.weight").type, TensorType::F32);
        EXPECT_EQ(f.get_u64("jal.synthetic.seed"), 3u);

        o.seed = 4;  // another seed, other weights
        write_synthetic_deepseek(p2, o);
        EXPECT_NE(slurp(p1), slurp(p2));
        std::filesystem::remove(p1);
        std::filesystem::remove(p2);
    }
}

}  // namespace
}  // namespace jal::model::test
