// The tokenizer against tiktoken (exact on every corpus string) and against llama.cpp's
// tokenizer on the same GGUF vocabulary (differences only for documented causes).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <jal/model/gguf.hpp>
#include <jal/model/harmony.hpp>
#include <jal/model/synthetic_gpt_oss.hpp>
#include <jal/model/tokenizer.hpp>

#include "corpus.hpp"
#include "llama_differences.hpp"
#include "tools/common/o200k_ranks.hpp"

namespace {

namespace fs = std::filesystem;
using jal::model::Tokenizer;
using Ids = std::vector<int32_t>;

// A file of this process in the temporary directory (ctest runs the tests of this suite
// as separate processes, in parallel).
fs::path scratch(const std::string& name)
{
    return fs::path(testing::TempDir()) /
           ("jal_tokenizer_" + std::to_string(getpid()) + "_" + name);
}

// Runs `program arg` with `input` (JSON) on stdin and parses its stdout as JSON.
nlohmann::json run_json(const std::string& program, const std::string& arg,
                        const nlohmann::json& input)
{
    const fs::path in = scratch("corpus.json");
    std::ofstream(in) << input.dump();
    const std::string cmd = "'" + program + "' " + arg + " < '" + in.string() + "'";
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) throw std::runtime_error("cannot run " + cmd);
    std::string out;
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    const int status = pclose(p);
    fs::remove(in);
    if (status != 0) throw std::runtime_error(cmd + " failed");
    return nlohmann::json::parse(out);
}

class TokenizerReference : public testing::Test {
protected:
    static void SetUpTestSuite()
    {
        ASSERT_FALSE(jal::tools::o200k_ranks().empty());
        model_ = scratch("o200k.gguf").string();
        jal::model::SyntheticGptOssOptions o;
        o.n_layer = 1, o.n_embd = 32, o.n_head = 1, o.n_head_kv = 1, o.head_dim = 2;
        o.n_expert = 1, o.n_ff_exp = 32;
        o.vocab = jal::model::SyntheticVocab::o200k;
        o.o200k_ranks = jal::tools::o200k_ranks();
        jal::model::write_synthetic_gpt_oss(model_, o);
        gguf_ = std::make_unique<jal::model::GgufFile>(jal::model::GgufFile::open(model_));
        tokenizer_ = Tokenizer::from_gguf(*gguf_);
        corpus_ = jal::test::tokenizer_corpus();
    }
    static void TearDownTestSuite()
    {
        tokenizer_.reset();
        gguf_.reset();
        fs::remove(model_);
    }

    static inline std::string model_;
    static inline std::unique_ptr<jal::model::GgufFile> gguf_;
    static inline std::unique_ptr<Tokenizer> tokenizer_;
    static inline std::vector<std::string> corpus_;
};

TEST_F(TokenizerReference, CorpusIsLargeAndVaried)
{
    EXPECT_GE(corpus_.size(), 2000u);
    EXPECT_EQ(tokenizer_->vocab_size(), 201088u);
}

// The vocabulary keys as in ggml-org's gpt-oss GGUF files (converted from gpt-oss's
// tokenizer.json): every split of each token into two tokens is a merge.
TEST_F(TokenizerReference, VocabularyKeysAreThoseOfTheConvertedGptOss)
{
    EXPECT_EQ(gguf_->array_size("tokenizer.ggml.merges"), 446189u);
    EXPECT_EQ(gguf_->get_string("tokenizer.ggml.pre"), "gpt-4o");
    EXPECT_EQ(gguf_->get_u32("tokenizer.ggml.bos_token_id"), 199998u);
    EXPECT_EQ(gguf_->get_u32("tokenizer.ggml.eos_token_id"), 200002u);
    EXPECT_EQ(gguf_->get_u32("tokenizer.ggml.padding_token_id"), 199999u);
    EXPECT_EQ(tokenizer_->special("<|start|>"), 200006);
    EXPECT_EQ(tokenizer_->special("<|reserved_200013|>"), 200013);
}

// llama.cpp loads the whole model (not only its vocabulary) and continues a harmony prompt.
TEST_F(TokenizerReference, LlamaCppRunsTheModel)
{
    const std::vector<jal::model::ChatMessage> chat = {{"user", "Hello", ""}};
    const Ids prompt = jal::model::harmony_prompt(*tokenizer_, chat);
    std::string ids;
    for (int32_t id : prompt) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    const std::string cmd = std::string("'") + JAL_LLAMA_REF_EXE + "' '" + model_ +
                            "' --prompt-ids " + ids + " --n 2 --json";
    FILE* p = popen(cmd.c_str(), "r");
    ASSERT_NE(p, nullptr);
    std::string out;
    char buf[4096];
    for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
    ASSERT_EQ(pclose(p), 0) << cmd;
    const auto j = nlohmann::json::parse(out);
    EXPECT_EQ(j["n_vocab"], 201088);
    EXPECT_EQ(j["prompt_ids"].get<Ids>(), prompt);
    EXPECT_EQ(j["tokens"].size(), 2u);
}

TEST_F(TokenizerReference, TiktokenAgreesOnEveryString)
{
    const auto expected = run_json(JAL_NODE, JAL_TIKTOKEN_ENCODE, corpus_);
    ASSERT_EQ(expected.size(), corpus_.size());
    size_t differ = 0;
    for (size_t i = 0; i < corpus_.size(); ++i) {
        const Ids ours = tokenizer_->encode(corpus_[i]);
        const Ids theirs = expected[i].get<Ids>();
        if (ours != theirs && ++differ <= 10)
            ADD_FAILURE() << "string " << i << " " << nlohmann::json(corpus_[i]).dump() << ": ours "
                          << nlohmann::json(ours).dump() << ", tiktoken "
                          << nlohmann::json(theirs).dump();
        EXPECT_EQ(tokenizer_->decode(ours), corpus_[i]);
    }
    EXPECT_EQ(differ, 0u) << "of " << corpus_.size() << " strings";
}

TEST_F(TokenizerReference, LlamaCppDiffersOnlyForDocumentedCauses)
{
    const auto llama = run_json(JAL_LLAMA_TOKENIZE, "'" + model_ + "'", corpus_);
    ASSERT_EQ(llama.size(), corpus_.size());
    const jal::test::LlamaDifferences explain(*tokenizer_);
    std::map<std::string, size_t> causes;
    size_t unexplained = 0;
    for (size_t i = 0; i < corpus_.size(); ++i) {
        const Ids ours = tokenizer_->encode(corpus_[i]);
        const Ids theirs = llama[i].get<Ids>();
        if (ours == theirs) continue;
        const auto cause = explain.cause(corpus_[i], theirs);
        if (cause) {
            ++causes[*cause];
            continue;
        }
        if (++unexplained <= 10)
            ADD_FAILURE() << "string " << i << " " << nlohmann::json(corpus_[i]).dump() << ": ours "
                          << nlohmann::json(ours).dump() << ", llama.cpp "
                          << nlohmann::json(theirs).dump();
    }
    EXPECT_EQ(unexplained, 0u) << "unexplained differences from llama.cpp";
    for (const auto& [cause, n] : causes)
        std::printf("llama.cpp differs (%s): %zu strings\n", cause.c_str(), n);
}

}  // namespace
