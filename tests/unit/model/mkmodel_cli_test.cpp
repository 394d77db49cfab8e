// jal-mkmodel's command line: presets, overrides, the JSON summary and its errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <jal/model/deepseek_config.hpp>
#include <jal/model/gpt_oss_config.hpp>
#include <jal/model/tokenizer.hpp>

namespace {

struct Output {
    int status;
    std::string text;
};

Output mkmodel(const std::string& args)
{
    Output o{-1, {}};
    FILE* p = popen((std::string(JAL_MKMODEL) + " " + args + " 2>&1").c_str(), "r");
    if (!p) return o;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) o.text.append(buf, n);
    const int st = pclose(p);
    o.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return o;
}

std::string temp_model()
{
    return ::testing::TempDir() + "mkmodel_cli_" + std::to_string(getpid()) + ".gguf";
}

TEST(MkmodelCli, PresetWithOverridesAndJsonSummary)
{
    const std::string path = temp_model();
    const Output o = mkmodel(
        path + " --preset small --seed 9 --layers 2 --vocab 300 --sliding-window 32 --json");
    ASSERT_EQ(o.status, 0) << o.text;
    const auto j = nlohmann::json::parse(o.text);
    EXPECT_EQ(j["preset"], "small");
    EXPECT_EQ(j["seed"], 9);
    EXPECT_EQ(j["shape"]["layers"], 2);
    EXPECT_EQ(j["shape"]["kv_heads"], 2);
    EXPECT_EQ(j["shape"]["vocab"], 300);
    EXPECT_EQ(j["shape"]["sliding_window"], 32);
    EXPECT_EQ(j["tensors"], 3 + 19 * 2);
    EXPECT_EQ(j["bytes"].get<uint64_t>(), std::filesystem::file_size(path));

    const auto f = jal::model::GgufFile::open(path);
    const auto c = jal::model::read_gpt_oss_config(f);
    EXPECT_EQ(c.n_layer, 2u);
    EXPECT_EQ(c.n_vocab, 300u);
    EXPECT_EQ(c.sliding_window, 32u);
    std::filesystem::remove(path);
}

TEST(MkmodelCli, DenseType)
{
    const std::string path = temp_model();
    Output o = mkmodel(path + " --seed 3 --dense-type q8_0 --json");
    ASSERT_EQ(o.status, 0) << o.text;
    EXPECT_EQ(nlohmann::json::parse(o.text)["dense_type"], "q8_0");
    const auto f = jal::model::GgufFile::open(path);
    EXPECT_EQ(f.tensor("output.weight").type, jal::model::TensorType::Q8_0);
    EXPECT_EQ(f.tensor("blk.0.attn_q.weight").type, jal::model::TensorType::Q8_0);
    EXPECT_EQ(f.tensor("blk.0.attn_q.bias").type, jal::model::TensorType::F32);
    EXPECT_EQ(f.tensor("blk.0.ffn_up_exps.weight").type, jal::model::TensorType::MXFP4);
    o = mkmodel(path + " --seed 3 --dense-type q4_0");
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.text.find("--dense-type q4_0: expected f32, f16, bf16 or q8_0"), std::string::npos)
        << o.text;
    std::filesystem::remove(path);
}

TEST(MkmodelCli, RefusesBadShapesAndPresets)
{
    const std::string path = temp_model();
    Output o = mkmodel(path + " --seed 1 --heads 4 --kv-heads 3");
    EXPECT_EQ(o.status, 1);
    EXPECT_NE(o.text.find("--kv-heads 3: expected a divisor of --heads 4"), std::string::npos)
        << o.text;
    o = mkmodel(path + " --seed 1 --preset enormous");
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.text.find("unknown preset 'enormous'"), std::string::npos) << o.text;
    o = mkmodel(path);  // --seed is required
    EXPECT_NE(o.status, 0);
    EXPECT_FALSE(std::filesystem::exists(path));
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(MkmodelCli, DeepseekPresetsWithOverrides)
{
    const std::string path = temp_model();
    Output o =
        mkmodel(path + " --preset ds-tiny --seed 4 --experts 8 --expert-groups 2 --groups-used 1 "
                       "--experts-per-token 3 --dense-layers 2 --vocab 100 --json");
    ASSERT_EQ(o.status, 0) << o.text;
    const auto j = nlohmann::json::parse(o.text);
    EXPECT_EQ(j["architecture"], "deepseek2");
    EXPECT_EQ(j["preset"], "ds-tiny");
    EXPECT_EQ(j["shape"]["experts"], 8);
    EXPECT_EQ(j["shape"]["expert_groups"], 2);
    EXPECT_EQ(j["shape"]["dense_layers"], 2);
    EXPECT_EQ(j["bytes"].get<uint64_t>(), std::filesystem::file_size(path));
    const auto c = jal::model::read_deepseek_config(jal::model::GgufFile::open(path));
    EXPECT_EQ(c.n_expert, 8u);
    EXPECT_EQ(c.n_expert_groups, 2u);
    EXPECT_EQ(c.n_group_used, 1u);
    EXPECT_EQ(c.n_expert_used, 3u);
    EXPECT_EQ(c.n_layer_dense_lead, 2u);
    EXPECT_EQ(c.n_vocab, 100u);

    // Options of the other architecture are refused, naming the option.
    o = mkmodel(path + " --preset kimi-tiny --seed 1 --sliding-window 8");
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.text.find("--sliding-window applies to the gpt-oss presets only"),
              std::string::npos)
        << o.text;
    o = mkmodel(path + " --preset small --seed 1 --expert-groups 2");
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.text.find("--expert-groups applies to the deepseek2 presets"), std::string::npos)
        << o.text;
    o = mkmodel(path + " --preset kimi-tiny --seed 1 --vocab o200k");
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.text.find("expected a size (the deepseek2 presets have no tokenizer)"),
              std::string::npos)
        << o.text;
    o = mkmodel(path + " --preset ds-tiny --seed 1 --groups-used 4");
    EXPECT_EQ(o.status, 1);
    EXPECT_NE(o.text.find("--groups-used 4: expected 1..3"), std::string::npos) << o.text;
    std::filesystem::remove(path);
}

TEST(MkmodelCli, Vocabularies)
{
    const std::string path = temp_model();
    Output o = mkmodel(path + " --seed 1 --vocab words");
    EXPECT_EQ(o.status, 2);
    EXPECT_NE(o.text.find("--vocab words: expected a size or o200k"), std::string::npos) << o.text;
    // The smallest shape, so that the 201,088-row matrices stay small.
    o = mkmodel(path + " --seed 1 --layers 1 --hidden 32 --heads 1 --kv-heads 1 --head-dim 2 "
                       "--experts 1 --expert-ffn 32 --vocab o200k --json");
#if JAL_MKMODEL_HAS_O200K
    ASSERT_EQ(o.status, 0) << o.text;
    const auto j = nlohmann::json::parse(o.text);
    EXPECT_EQ(j["tokenizer"], "gpt2");
    EXPECT_EQ(j["shape"]["vocab"], 201088);
    const auto f = jal::model::GgufFile::open(path);
    EXPECT_EQ(jal::model::read_gpt_oss_config(f).n_vocab, 201088u);
    const auto t = jal::model::Tokenizer::from_gguf(f);
    EXPECT_EQ(t->encode("Hello world"), (std::vector<int32_t>{13225, 2375}));
    EXPECT_EQ(t->special("<|start|>"), 200006);
    std::filesystem::remove(path);
#else
    // A build without scripts/fetch-tiktoken.sh's ranks says where to get them.
    EXPECT_EQ(o.status, 1);
    EXPECT_NE(o.text.find("fetch-tiktoken"), std::string::npos) << o.text;
#endif
}

}  // namespace
