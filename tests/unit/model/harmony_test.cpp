// The harmony format: the prompt's exact layout, and the reply split by channel.
#include <gtest/gtest.h>

#include <jal/error.hpp>
#include <jal/model/harmony.hpp>

#include "tokenizer_test_vocab.hpp"

namespace jal::model::test {
namespace {

class HarmonyTest : public testing::Test {
protected:
    SmallVocab v;
    const Tokenizer& t() const { return *v.tokenizer; }
    size_t count_special(const std::vector<int32_t>& ids) const
    {
        size_t n = 0;
        for (int32_t id : ids) n += t().is_special(id);
        return n;
    }
};

TEST_F(HarmonyTest, RendersTheSystemDeveloperAndUserMessages)
{
    HarmonyOptions o;
    o.current_date = "2025-06-28";
    o.reasoning_effort = "high";
    const std::vector<ChatMessage> messages = {{"system", "Be brief.", ""},
                                               {"user", "Hi <|start|>", ""}};
    const auto ids = harmony_prompt(t(), messages, o);
    EXPECT_EQ(t().decode(ids),
              "<|start|>system<|message|>You are ChatGPT, a large language model trained by "
              "OpenAI.\nKnowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: "
              "high\n\n# Valid channels: analysis, commentary, final. Channel must be included "
              "for every message.<|end|><|start|>developer<|message|># Instructions\n\nBe "
              "brief.<|end|><|start|>user<|message|>Hi <|start|><|end|><|start|>assistant");
    // The user's "<|start|>" is text: 3 messages x (start, message, end) + the last start.
    EXPECT_EQ(count_special(ids), 10u);
    EXPECT_EQ(ids.front(), v.special("<|start|>"));
    // The role of the reply is encoded on its own, as harmony renders it.
    const std::vector<int32_t> tail(ids.end() - 2, ids.end());
    EXPECT_EQ(tail, (std::vector<int32_t>{v.special("<|start|>"), v.id("assistant")}));
}

TEST_F(HarmonyTest, LeavesOutTheDateWhenNotGiven)
{
    const auto text = t().decode(harmony_prompt(t(), std::vector<ChatMessage>{}));
    EXPECT_EQ(text, "<|start|>system<|message|>You are ChatGPT, a large language model trained by "
                    "OpenAI.\nKnowledge cutoff: 2024-06\n\nReasoning: medium\n\n# Valid channels: "
                    "analysis, commentary, final. Channel must be included for every "
                    "message.<|end|><|start|>assistant");
}

TEST_F(HarmonyTest, DropsEarlierReasoningOnceAFinalAnswerFollows)
{
    const std::vector<ChatMessage> messages = {
        {"user", "Q1", ""},
        {"assistant", "thinking", "analysis"},
        {"assistant", "A1", "final"},
        {"user", "Q2", ""},
    };
    const std::string text = t().decode(harmony_prompt(t(), messages));
    EXPECT_EQ(text.find("thinking"), std::string::npos);
    EXPECT_NE(text.find("<|start|>assistant<|channel|>final<|message|>A1<|end|>"),
              std::string::npos);
    // Reasoning after the last final answer (a tool-calling turn in progress) stays.
    const std::vector<ChatMessage> open = {{"user", "Q", ""}, {"assistant", "mid", "analysis"}};
    EXPECT_NE(t().decode(harmony_prompt(t(), open))
                  .find("<|start|>assistant<|channel|>analysis<|message|>mid<|end|>"),
              std::string::npos);
    EXPECT_THROW(harmony_prompt(t(), std::vector<ChatMessage>{{"robot", "x", ""}}), Error);
}

TEST_F(HarmonyTest, StopTokensEndTheTurn)
{
    EXPECT_EQ(harmony_stop_tokens(t()),
              (std::vector<int32_t>{v.special("<|return|>"), v.special("<|call|>")}));
}

TEST_F(HarmonyTest, ReaderSplitsTheReplyByChannel)
{
    // What a model writes after "<|start|>assistant".
    const auto ids = t().encode_with_specials(
        "<|channel|>analysis<|message|>hm<|end|><|start|>assistant<|channel|>final<|message|>"
        "Caf\xC3\xA9!<|return|>");
    HarmonyReader r(t());
    std::string analysis, final_text;
    bool message_ended = false, turn_ended = false;
    for (int32_t id : ids) {
        const auto p = r.push(id);
        (p.channel == "analysis" ? analysis : final_text) += p.text;
        message_ended |= p.message_end && p.channel == "analysis";
        turn_ended |= p.turn_end;
    }
    EXPECT_EQ(analysis, "hm");
    EXPECT_EQ(final_text, "Caf\xC3\xA9!");
    EXPECT_TRUE(message_ended);
    EXPECT_TRUE(turn_ended);
    EXPECT_EQ(r.finish().text, "");
}

}  // namespace
}  // namespace jal::model::test
