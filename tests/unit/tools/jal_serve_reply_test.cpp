// jal-serve's reply side without a chip: stop strings across streamed pieces, channels of a
// chat reply, the OpenAI reply shapes, the Prometheus text.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "api_response.hpp"
#include "fake_codec.hpp"
#include "reply_text.hpp"
#include "serve_metrics.hpp"
#include "stop_matcher.hpp"

namespace {

using namespace jal::serve;

TEST(JalServeStop, MatchAcrossPiecesHidesTheStopAndWhatFollows)
{
    StopMatcher m({"END", "xy"});
    EXPECT_EQ(m.push("hello E").text, "hello ");  // "E" could start "END"
    const StopMatcher::Result r = m.push("NDmore");
    EXPECT_TRUE(r.stopped);
    EXPECT_EQ(r.text, "");
    EXPECT_EQ(m.push("more").text, "");
    EXPECT_EQ(m.flush(), "");
}

TEST(JalServeStop, HeldTextIsReleasedWhenItCannotMatch)
{
    StopMatcher m({"END"});
    EXPECT_EQ(m.push("aE").text, "a");
    EXPECT_EQ(m.push("Nb").text, "ENb");
    EXPECT_EQ(m.push("EN").text, "");
    EXPECT_EQ(m.flush(), "EN");  // the reply ended first
}

TEST(JalServeReply, ChatChannelsAndStop)
{
    test::ByteCodec codec;
    ReplyText text(codec.chat_decoder(), {"!"});
    // analysis "hm", then final "ok!ignored"
    const ReplyDelta d = text.push({1, 'h', 'm', 2, 'o', 'k', '!', 'z'});
    EXPECT_EQ(d.reasoning, "hm");
    EXPECT_EQ(d.content, "ok");
    EXPECT_TRUE(d.stopped);
    EXPECT_EQ(d.token_ids, (std::vector<int32_t>{1, 'h', 'm', 2, 'o', 'k', '!'}));
}

TEST(JalServeReply, Shapes)
{
    ReplyDelta all;
    all.token_ids = {7, 8};
    all.content = "hi";
    all.reasoning = "think";
    const ReplyHeader chat{"chatcmpl-1", 5, "m", true};
    const nlohmann::json whole = full_reply(chat, all, "stop", {3, 2});
    EXPECT_EQ(whole["object"], "chat.completion");
    EXPECT_EQ(whole["choices"][0]["message"]["content"], "hi");
    EXPECT_EQ(whole["choices"][0]["message"]["reasoning_content"], "think");
    EXPECT_EQ(whole["choices"][0]["finish_reason"], "stop");
    EXPECT_EQ(whole["usage"]["total_tokens"], 5);
    const nlohmann::json first = reply_chunk(chat, {}, nullptr, true);
    EXPECT_EQ(first["object"], "chat.completion.chunk");
    EXPECT_EQ(first["choices"][0]["delta"]["role"], "assistant");
    EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
    const ReplyHeader text{"cmpl-1", 5, "m", false};
    const nlohmann::json chunk = reply_chunk(text, all, "length", false);
    EXPECT_EQ(chunk["object"], "text_completion");
    EXPECT_EQ(chunk["choices"][0]["text"], "hi");
    EXPECT_EQ(chunk["choices"][0]["token_ids"], nlohmann::json({7, 8}));
    EXPECT_EQ(usage_chunk(text, {1, 1})["choices"].size(), 0u);
}

TEST(JalServeMetrics, PrometheusText)
{
    Metrics m;
    m.count_request("/v1/completions", 200);
    m.count_request("/v1/completions", 200);
    m.count_tokens(3, 5);
    m.observe_ttft(0.003);
    m.observe_ttft(100);
    m.set_load(0, 2, 1);
    m.set_load(1, 3, 4);
    m.count_admitted(1);
    const std::string t = m.render();
    EXPECT_NE(t.find("jal_serve_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n"),
              std::string::npos)
        << t;
    EXPECT_NE(t.find("jal_serve_prompt_tokens_total 3\n"), std::string::npos);
    EXPECT_NE(t.find("jal_serve_generation_tokens_total 5\n"), std::string::npos);
    // Cumulative buckets: 0.003 s falls in le=0.005 and above; 100 s only in +Inf.
    EXPECT_NE(t.find("jal_serve_time_to_first_token_seconds_bucket{le=\"0.0025\"} 0\n"),
              std::string::npos);
    EXPECT_NE(t.find("jal_serve_time_to_first_token_seconds_bucket{le=\"0.005\"} 1\n"),
              std::string::npos);
    EXPECT_NE(t.find("jal_serve_time_to_first_token_seconds_bucket{le=\"60\"} 1\n"),
              std::string::npos);
    EXPECT_NE(t.find("jal_serve_time_to_first_token_seconds_bucket{le=\"+Inf\"} 2\n"),
              std::string::npos);
    // Two chips: the unlabelled gauges are sums, each chip has its own under its label.
    EXPECT_NE(t.find("jal_serve_queue_depth 5\n"), std::string::npos) << t;
    EXPECT_NE(t.find("jal_serve_running_sequences 5\n"), std::string::npos);
    EXPECT_EQ(m.running(), 5u);
    EXPECT_NE(t.find("jal_serve_chips 2\n"), std::string::npos);
    EXPECT_NE(t.find("jal_serve_chip_running{chip=\"0\"} 1\n"), std::string::npos);
    EXPECT_NE(t.find("jal_serve_chip_running{chip=\"1\"} 4\n"), std::string::npos);
    EXPECT_NE(t.find("jal_serve_chip_requests_admitted_total{chip=\"0\"} 0\n"), std::string::npos);
    EXPECT_NE(t.find("jal_serve_chip_requests_admitted_total{chip=\"1\"} 1\n"), std::string::npos);
    EXPECT_NE(t.find("# TYPE jal_serve_chip_power_watts gauge\n"), std::string::npos);
    // Idle chips draw their static power each.
    EXPECT_NE(t.find(fmt::format("jal_serve_chip_power_watts {}\n", 2 * jal::model::kStaticPowerW)),
              std::string::npos);
}

}  // namespace
