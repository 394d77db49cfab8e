// jal-serve's request parsing and planning (tools/jal-serve/api_request.hpp,
// generation_plan.hpp): OpenAI fields and their errors, without a chip.
#include <gtest/gtest.h>

#include "api_error.hpp"
#include "api_request.hpp"
#include "fake_codec.hpp"
#include "generation_plan.hpp"

namespace {

using namespace jal::serve;

const ModelInfo kModel{"m", 256, 64};

// The message of the ApiError that `f` throws ("" if none).
template <typename F>
std::string error_of(F f)
{
    try {
        f();
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status(), 400u);
        return std::string(e.what()) + " [" + e.param() + "]";
    }
    return "";
}

TEST(JalServeRequest, CompletionFields)
{
    const ApiRequest r = parse_api_request(
        R"({"model": "m", "prompt": [5, 6], "max_tokens": 4, "temperature": 0.5, "top_p": 0.9,
            "seed": 7, "stop": "x", "ignore_eos": true, "stream": true,
            "stream_options": {"include_usage": true}, "logprobs": null})",
        false);
    EXPECT_EQ(r.model, "m");
    EXPECT_EQ(r.prompt_ids, (std::vector<int32_t>{5, 6}));
    EXPECT_FALSE(r.prompt_text);
    EXPECT_EQ(r.max_tokens, 4u);
    EXPECT_FLOAT_EQ(r.temperature, 0.5f);
    EXPECT_FLOAT_EQ(r.top_p, 0.9f);
    EXPECT_EQ(r.seed, 7u);
    EXPECT_EQ(r.stop, std::vector<std::string>{"x"});
    EXPECT_TRUE(r.ignore_eos && r.stream && r.include_usage);
}

TEST(JalServeRequest, NullMeansUnset)
{
    const ApiRequest r = parse_api_request(
        R"({"prompt": "hi", "max_tokens": null, "temperature": null, "stop": null})", false);
    EXPECT_EQ(r.prompt_text, "hi");
    EXPECT_FALSE(r.max_tokens);
    EXPECT_FLOAT_EQ(r.temperature, 1.0f);  // OpenAI's default
    EXPECT_TRUE(r.stop.empty());
}

TEST(JalServeRequest, ChatTakesMaxCompletionTokens)
{
    const ApiRequest r = parse_api_request(
        R"({"messages": [{"role": "system", "content": "be brief"}, {"role": "user",
            "content": "hi"}], "max_tokens": 9, "max_completion_tokens": 3})",
        true);
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[1].role, "user");
    EXPECT_EQ(r.messages[1].content, "hi");
    EXPECT_EQ(r.max_tokens, 3u);
}

TEST(JalServeRequest, WrongTypesAreNamed)
{
    auto parse = [](const char* body) { return error_of([&] { parse_api_request(body, false); }); };
    EXPECT_EQ(parse("{"), "the request body is not valid JSON []");
    EXPECT_EQ(parse(R"({"prompt": [1], "seed": 1.5})"), "'seed' must be an integer [seed]");
    EXPECT_EQ(parse(R"({"prompt": [1], "max_tokens": -1})"),
              "'max_tokens' must be >= 0 [max_tokens]");
    EXPECT_EQ(parse(R"({"prompt": [1], "top_p": 0})"), "'top_p' must be greater than 0 [top_p]");
    EXPECT_EQ(parse(R"({"prompt": [1], "stop": [1]})"),
              "'stop' must be a string or an array of strings [stop]");
    EXPECT_EQ(parse(R"({"prompt": [[1, 2], [3]]})").substr(0, 61),
              "'prompt' must be a string or an array of token ids (integers)");
    EXPECT_EQ(parse(R"({"prompt": [1], "stream_options": 1})"),
              "'stream_options' must be an object [stream_options]");
    EXPECT_EQ(error_of([] { parse_api_request(R"({"messages": [{"content": "x"}]})", true); }),
              "each message must be an object with a string 'role' [messages]");
}

TEST(JalServePlan, TextPromptsAndStopIdsWithAVocabulary)
{
    test::ByteCodec codec;
    ApiRequest r = parse_api_request(R"({"prompt": "ab", "max_tokens": 2})", false);
    GenerationParams p = plan_generation(r, kModel, codec);
    EXPECT_EQ(p.prompt, (std::vector<int32_t>{'a', 'b'}));
    EXPECT_EQ(p.stop_ids, std::vector<int32_t>{0});
    r.ignore_eos = true;
    EXPECT_TRUE(plan_generation(r, kModel, codec).stop_ids.empty());
}

TEST(JalServePlan, ChatDefaultsToTheRoomLeft)
{
    test::ByteCodec codec;
    const ApiRequest r =
        parse_api_request(R"({"messages": [{"role": "user", "content": "hey"}]})", true);
    const GenerationParams p = plan_generation(r, kModel, codec);
    EXPECT_EQ(p.prompt, (std::vector<int32_t>{'u', 'h', 'e', 'y'}));
    EXPECT_EQ(p.max_tokens, kModel.n_ctx - 4 + 1);  // the last token takes no position
    EXPECT_EQ(p.stop_ids, std::vector<int32_t>{3});
}

TEST(JalServePlan, LengthLimits)
{
    test::ByteCodec codec;
    auto plan = [&](const char* body) {
        return error_of([&] { plan_generation(parse_api_request(body, false), kModel, codec); });
    };
    // 4 prompt tokens + 61 generated = 64 positions: fits exactly.
    EXPECT_EQ(plan(R"({"prompt": [1, 2, 3, 4], "max_tokens": 61})"), "");
    EXPECT_EQ(plan(R"({"prompt": [1, 2, 3, 4], "max_tokens": 62})"),
              "a 4-token prompt and max_tokens 62 need 65 positions; the context holds 64 "
              "[max_tokens]");
    // The default (16) shrinks to the room left rather than failing.
    const std::string fifty = R"({"prompt": ")" + std::string(50, 'a') + R"("})";
    const GenerationParams p = plan_generation(parse_api_request(fifty, false), kModel, codec);
    EXPECT_EQ(p.max_tokens, 15u);
}

TEST(JalServePlan, IdOnlyModelRefusesText)
{
    auto codec = make_id_only_codec();
    auto plan = [&](const char* body, bool chat) {
        return error_of([&] { plan_generation(parse_api_request(body, chat), kModel, *codec); });
    };
    EXPECT_EQ(plan(R"({"prompt": [1, 2]})", false), "");
    EXPECT_EQ(plan(R"({"prompt": "x"})", false),
              "this model has no vocabulary; send the prompt as an array of token ids [prompt]");
    EXPECT_NE(plan(R"({"messages": [{"role": "user", "content": "x"}]})", true).find("[messages]"),
              std::string::npos);
    EXPECT_EQ(plan(R"({"prompt": [1], "model": "other"})", false),
              "the model 'other' does not exist; this server serves 'm' [model]");
}

}  // namespace
