// Synthetic models (jal-mkmodel) run on llama.cpp (jal-llama-ref): llama.cpp loads every
// preset, GPT-OSS and DeepSeek-V3 (deepseek2), generates deterministically, the output
// depends on the context (not one token forever), and teacher forcing reports the forced
// continuation's steps. For deepseek2, the expert groups written are the ones llama.cpp
// routes by.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

struct Command {
    int status;
    std::string out;
};

Command run(const std::string& command)
{
    Command r{-1, {}};
    FILE* p = popen(command.c_str(), "r");
    if (!p) return r;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    const int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return r;
}

std::string join(const std::vector<int>& ids)
{
    std::string s;
    for (int id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
    return s;
}

class LlamaReference : public ::testing::TestWithParam<std::string> {
protected:
    void SetUp() override
    {
        model_ = ::testing::TempDir() + "llama_ref_" + GetParam() + "_" + std::to_string(getpid()) +
                 ".gguf";
        const Command mk = run(std::string(JAL_MKMODEL) + " " + model_ + " --preset " + GetParam() +
                               " --seed 5 --json");
        ASSERT_EQ(mk.status, 0) << mk.out;
        const auto summary = nlohmann::json::parse(mk.out);
        vocab_ = summary["shape"]["vocab"].get<int>();
        // 70 prompt tokens: longer than the shortest GPT-OSS preset window, so both
        // attention kinds see different keys.
        for (int i = 0; i < 70; ++i) prompt_.push_back((i * 37 + 11) % vocab_);
    }
    void TearDown() override { std::filesystem::remove(model_); }

    nlohmann::json reference(const std::string& extra)
    {
        const Command r = run(std::string(JAL_LLAMA_REF_EXE) + " " + model_ + " --prompt-ids " +
                              join(prompt_) + " --top 5 --json " + extra);
        EXPECT_EQ(r.status, 0) << r.out;
        return r.status == 0 ? nlohmann::json::parse(r.out) : nlohmann::json{};
    }

    std::string model_;
    int vocab_ = 0;
    std::vector<int> prompt_;
};

TEST_P(LlamaReference, GreedyIsDeterministicAndVaries)
{
    const nlohmann::json a = reference("--n 24");
    const nlohmann::json b = reference("--n 24");
    ASSERT_FALSE(a.is_null());
    EXPECT_EQ(a["tokens"], b["tokens"]);
    EXPECT_EQ(a["top_logprobs"], b["top_logprobs"]);  // bit for bit: same digits
    EXPECT_EQ(a["n_vocab"].get<int>(), vocab_);
    EXPECT_FALSE(a["forced"].get<bool>());

    const auto tokens = a["tokens"].get<std::vector<int>>();
    ASSERT_EQ(tokens.size(), 24u);
    ASSERT_EQ(a["top_ids"].size(), 24u);
    std::vector<int> distinct(tokens);
    std::sort(distinct.begin(), distinct.end());
    distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
    EXPECT_GT(distinct.size(), 4u) << a["tokens"].dump();
    for (size_t i = 0; i < tokens.size(); ++i) {
        const auto ids = a["top_ids"][i].get<std::vector<int>>();
        const auto lp = a["top_logprobs"][i].get<std::vector<double>>();
        ASSERT_EQ(ids.size(), 5u);
        ASSERT_EQ(lp.size(), 5u);
        EXPECT_EQ(ids[0], tokens[i]);  // greedy = argmax
        EXPECT_LE(lp[0], 0.0);
        for (size_t k = 1; k < lp.size(); ++k) EXPECT_LE(lp[k], lp[k - 1]);
        for (int id : ids) EXPECT_TRUE(id >= 0 && id < vocab_);
    }
}

TEST_P(LlamaReference, TeacherForcingReportsTheForcedSteps)
{
    const nlohmann::json free_run = reference("--n 16");
    ASSERT_FALSE(free_run.is_null());
    auto forced = free_run["tokens"].get<std::vector<int>>();
    // Follow the greedy path for 4 steps, then force a token the model did not choose.
    forced[4] = (forced[4] + 1) % vocab_;
    const nlohmann::json f = reference("--force-ids " + join(forced));
    ASSERT_FALSE(f.is_null());
    EXPECT_TRUE(f["forced"].get<bool>());
    EXPECT_EQ(f["tokens"].get<std::vector<int>>(), forced);
    ASSERT_EQ(f["top_ids"].size(), forced.size());
    // Up to and including step 4 the contexts are the same as the free run's.
    for (size_t i = 0; i <= 4; ++i) {
        EXPECT_EQ(f["top_ids"][i], free_run["top_ids"][i]) << i;
        EXPECT_EQ(f["top_logprobs"][i], free_run["top_logprobs"][i]) << i;
    }
    EXPECT_NE(f["argmax_ids"][4].get<int>(), forced[4]);
    // After the forced token the model sees a different context.
    bool differs = false;
    for (size_t i = 5; i < forced.size(); ++i)
        differs |= f["top_logprobs"][i] != free_run["top_logprobs"][i];
    EXPECT_TRUE(differs);
}

TEST_P(LlamaReference, RefusesIdsOutsideTheVocabulary)
{
    const Command r = run(std::string(JAL_LLAMA_REF_EXE) + " " + model_ + " --prompt-ids 1," +
                          std::to_string(vocab_) + " --n 2 --json 2>&1");
    EXPECT_NE(r.status, 0);
    EXPECT_NE(r.out.find("prompt id " + std::to_string(vocab_) + " >= vocabulary"),
              std::string::npos)
        << r.out;
}

// The same weights (each tensor is drawn from the seed and its name) with ds-tiny's groups
// and with the groups off: llama.cpp routes by the groups written, so the logits differ.
TEST(LlamaReferenceDeepseek, ExpertGroupsRoute)
{
    const std::string base = ::testing::TempDir() + "llama_ref_groups_" + std::to_string(getpid());
    std::vector<int> prompt;
    for (int i = 0; i < 40; ++i) prompt.push_back((i * 37 + 11) % 256);
    std::vector<nlohmann::json> out;
    for (const char* groups : {"4 --groups-used 2", "1 --groups-used 1"}) {
        const std::string model = base + "_" + std::to_string(out.size()) + ".gguf";
        const Command mk = run(std::string(JAL_MKMODEL) + " " + model +
                               " --preset ds-tiny --seed 5 -q --expert-groups " + groups);
        ASSERT_EQ(mk.status, 0) << mk.out;
        const Command r = run(std::string(JAL_LLAMA_REF_EXE) + " " + model + " --prompt-ids " +
                              join(prompt) + " --top 5 --json --n 8");
        std::filesystem::remove(model);
        ASSERT_EQ(r.status, 0) << r.out;
        out.push_back(nlohmann::json::parse(r.out));
    }
    EXPECT_NE(out[0]["top_logprobs"], out[1]["top_logprobs"]);
}

INSTANTIATE_TEST_SUITE_P(Presets, LlamaReference,
                         ::testing::Values("tiny", "small", "gqa-window", "ds-tiny", "kimi-tiny"),
                         [](const auto& info) {
                             std::string n = info.param;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

}  // namespace
