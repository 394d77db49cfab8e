// Synthetic GPT-OSS models: presets, determinism, and that the file reads back as the
// architecture it claims (MXFP4 experts, F32 or --dense-type elsewhere).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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
    o = micro_options();
    o.dense_type = TensorType::Q8_0;
    o.head_dim = 6;  // attn_output rows of 2 x 6 elements: not whole Q8_0 blocks
    expect_error([&] { synthetic_config(o); }, JAL_STATUS_INVALID_FIELD,
                 {"--dense-type", "multiple of 32"});
    o = micro_options();
    o.dense_type = TensorType::MXFP4;
    expect_error([&] { synthetic_config(o); }, JAL_STATUS_INVALID_FIELD,
                 {"--dense-type mxfp4: expected f32, f16, bf16 or q8_0"});
    EXPECT_FALSE(synthetic_dense_type("q4_0").has_value());
}

// --dense-type: the dense matrices in that type, rounded from the same draws as the F32
// model; everything else (experts, norms, biases, sinks) byte for byte the same.
TEST(SyntheticModel, DenseTypesRoundTheSameDraws)
{
    SyntheticGptOssOptions o = micro_options();
    o.seed = 5;
    const std::string base = temp_path("dense_f32");
    write_synthetic_gpt_oss(base, o);
    const GgufFile f32 = GgufFile::open(base);
    for (const char* name : {"f16", "bf16", "q8_0"}) {
        SCOPED_TRACE(name);
        o.dense_type = *synthetic_dense_type(name);
        const std::string path = temp_path(std::string("dense_") + name);
        write_synthetic_gpt_oss(path, o);
        const GgufFile f = GgufFile::open(path);
        read_gpt_oss_config(f);  // the types are ones llama.cpp takes
        size_t dense = 0;
        for (const GgufTensor& t : f.tensors()) {
            const GgufTensor& ref = f32.tensor(t.name);
            const bool is_dense = t.n_dims == 2 && t.name.ends_with(".weight");
            if (!is_dense) {
                EXPECT_EQ(t.type, ref.type) << t.name;
                EXPECT_TRUE(
                    std::equal(t.data.begin(), t.data.end(), ref.data.begin(), ref.data.end()))
                    << t.name;
                continue;
            }
            dense++;
            EXPECT_EQ(t.type, o.dense_type) << t.name;
            const jal_dtype dt = o.dense_type == TensorType::F16    ? JAL_DT_F16
                                 : o.dense_type == TensorType::BF16 ? JAL_DT_BF16
                                                                    : JAL_DT_Q8_0;
            std::vector<float> got(t.n_elements), want(t.n_elements);
            numerics::dequantize_row(dt, t.data.data(), got.data(), got.size());
            std::memcpy(want.data(), ref.data.data(), want.size() * 4);
            for (size_t b = 0; b < want.size(); b += 32) {  // error per 32-value block
                float amax = 0;
                for (size_t i = b; i < b + 32; i++) amax = std::max(amax, std::fabs(want[i]));
                for (size_t i = b; i < b + 32; i++) {
                    // Q8_0: half a step of d = amax/127, plus q·(F16(d) - d)
                    const double tol = dt == JAL_DT_Q8_0 ? amax / 127.0 * (0.5 + 127 * 0x1p-11)
                                       : dt == JAL_DT_F16
                                           ? std::max(std::fabs(want[i]) * 0x1p-11, 0x1p-25)
                                           : std::fabs(want[i]) * 0x1p-8;
                    ASSERT_LE(std::fabs(got[i] - want[i]), tol) << t.name << " element " << i;
                }
            }
        }
        EXPECT_EQ(dense, 2 + 5 * o.n_layer);  // token_embd, output; q, k, v, o, router
        std::filesystem::remove(path);
    }
    std::filesystem::remove(base);
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
