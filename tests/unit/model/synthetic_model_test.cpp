// Synthetic GPT-OSS models: presets, determinism, and that the file reads back as the
// architecture it claims (MXFP4 experts, F32 elsewhere).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <unistd.h>

#include <jal/isa/numerics.hpp>
#include <jal/model/synthetic_gpt_oss.hpp>

#include "gguf_test_util.hpp"

namespace jal::model::test {
namespace {

std::string temp_path(const std::string& tag)
{
    return ::testing::TempDir() + "synthetic_" + tag + "_" + std::to_string(getpid()) + ".gguf";
}

std::string slurp(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(SyntheticModel, PresetsCoverTheShapesTheReferenceTestsNeed)
{
    bool multi_expert = false, gqa = false, short_window = false;
    for (const std::string& name : synthetic_preset_names()) {
        SCOPED_TRACE(name);
        const auto o = synthetic_preset(name);
        ASSERT_TRUE(o.has_value());
        const GptOssConfig c = synthetic_config(*o);
        multi_expert |= c.n_expert_used > 1;
        gqa |= c.n_head_kv < c.n_head;
        short_window |= c.sliding_window < 64;
    }
    EXPECT_TRUE(multi_expert);
    EXPECT_TRUE(gqa);
    EXPECT_TRUE(short_window);
    EXPECT_FALSE(synthetic_preset("huge").has_value());
}

TEST(SyntheticModel, RefusesImpossibleShapes)
{
    SyntheticGptOssOptions o = micro_options();
    o.n_head_kv = 3;
    expect_error([&] { synthetic_config(o); }, JAL_STATUS_INVALID_FIELD,
                 {"--kv-heads 3: expected a divisor of --heads 2"});
    o = micro_options();
    o.n_embd = 48;
    expect_error([&] { synthetic_config(o); }, JAL_STATUS_INVALID_FIELD,
                 {"--hidden 48", "multiple of 32"});
    o = micro_options();
    o.n_expert_used = 3;
    expect_error([&] { synthetic_config(o); }, JAL_STATUS_INVALID_FIELD, {"--experts-per-token 3"});
}

TEST(SyntheticModel, SameSeedSameBytesAndReadsBack)
{
    SyntheticGptOssOptions o = *synthetic_preset("gqa-window");
    o.seed = 11;
    const std::string a = temp_path("a"), b = temp_path("b"), c = temp_path("c");
    const SyntheticModelSummary s = write_synthetic_gpt_oss(a, o);
    write_synthetic_gpt_oss(b, o);
    o.seed = 12;
    write_synthetic_gpt_oss(c, o);
    const std::string bytes_a = slurp(a);
    EXPECT_EQ(bytes_a.size(), s.file_bytes);
    EXPECT_EQ(bytes_a, slurp(b));
    EXPECT_NE(bytes_a, slurp(c));
    EXPECT_FALSE(std::filesystem::exists(a + ".tmp"));

    const GgufFile f = GgufFile::open(a);
    const GptOssConfig cfg = read_gpt_oss_config(f);
    EXPECT_EQ(cfg.n_layer, 3u);
    EXPECT_EQ(cfg.n_head_kv, 2u);
    EXPECT_EQ(cfg.n_expert_used, 3u);
    EXPECT_EQ(cfg.sliding_window, 16u);
    EXPECT_EQ(cfg.rope_scaling_type, "yarn");
    EXPECT_FLOAT_EQ(cfg.rope_scaling_factor, 32.0f);
    EXPECT_EQ(cfg.rope_orig_ctx, 4096u);
    EXPECT_EQ(f.get_u64("jal.synthetic.seed"), 11u);
    EXPECT_EQ(f.tensors().size(), s.tensors);

    for (const GgufTensor& t : f.tensors())
        EXPECT_EQ(t.type, t.n_dims == 3 ? TensorType::MXFP4 : TensorType::F32) << t.name;

    // The experts' values have the intended spread (about 1/sqrt(hidden)) after MXFP4.
    const GgufTensor& up = f.tensor("blk.1.ffn_up_exps.weight");
    std::vector<float> v(up.n_elements);
    numerics::dequantize_row(JAL_DT_MXFP4, up.data.data(), v.data(), v.size());
    double sq = 0;
    for (float x : v) sq += double{x} * x;
    const double rms = std::sqrt(sq / v.size());
    EXPECT_NEAR(rms, 1.0 / std::sqrt(96.0), 0.3 / std::sqrt(96.0));

    for (const auto& p : {a, b, c}) std::filesystem::remove(p);
}

}  // namespace
}  // namespace jal::model::test
