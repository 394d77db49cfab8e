// jal-serve end to end: a private jal-emu, a small synthetic model (no vocabulary: token
// ids in, token ids out) and the server on a free port, driven with curl, a raw socket
// (to hang up mid-stream) and the official OpenAI Node.js client. No timings are asserted;
// every wait polls for its condition.
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fixture/emu_process.hpp>
#include <fixture/run_command.hpp>

#include "serve_http.hpp"
#include "serve_process.hpp"

namespace {

using jal::test::bin_path;
using jal::test::CommandResult;
using jal::test::curl;
using jal::test::Events;
using jal::test::HttpReply;
using jal::test::metric;
using jal::test::parse_events;
using jal::test::post;
using jal::test::RawConnection;
using jal::test::run_command;
using jal::test::ServeProcess;
using jal::test::wait_for;
using nlohmann::json;
namespace fs = std::filesystem;

constexpr unsigned kGreedyTokens = 8;
constexpr uint32_t kContext = 4096;  // the server's default for this model
const char* const kModelId = "serve-test";

class JalServe : public ::testing::Test {
protected:
    static void SetUpTestSuite()
    {
        jal::test::EmuOptions eo;
        eo.extra_args = {"--fw", "native"};
        emu_ = new jal::test::EmuProcess(eo);
        dir_ = new std::string(fs::temp_directory_path() /
                               ("jal-serve-test-" + std::to_string(::getpid())));
        fs::create_directories(*dir_);
        const CommandResult mk =
            run_command({bin_path("jal-mkmodel"), "--seed", "3", "-q", model_path()}, {});
        ASSERT_EQ(mk.exit_code, 0) << mk.err;
        const CommandResult run =
            run_command({bin_path("jal-run"), model_path(), "--prompt-ids", "1,2,3", "--n",
                         std::to_string(kGreedyTokens), "--json"},
                        {emu_->env()});
        ASSERT_EQ(run.exit_code, 0) << run.err;
        greedy_ = new std::vector<int32_t>(json::parse(run.out)["tokens"]);
        server_ = start_server({});
    }
    static void TearDownTestSuite()
    {
        if (server_) {
            EXPECT_EQ(server_->stop(SIGTERM), "") << server_->output();
        }
        delete server_;
        server_ = nullptr;
        EXPECT_EQ(emu_->stop(), "");
        delete emu_;
        fs::remove_all(*dir_);
        delete dir_;
        delete greedy_;
    }
    static std::string model_path() { return *dir_ + "/" + kModelId + ".gguf"; }
    static ServeProcess* start_server(std::vector<std::string> extra)
    {
        std::vector<std::string> args = {model_path(), "--emu-dir", emu_->socket_dir()};
        args.insert(args.end(), extra.begin(), extra.end());
        return new ServeProcess(bin_path("jal-serve"), args);
    }
    static std::string url(const std::string& path) { return server_->url() + path; }
    // Waits until nothing runs and `cancelled` generations have been cancelled; `text`: the
    // last metrics read.
    static bool freed_and_counted(double cancelled, std::string& text)
    {
        return wait_for([&] {
            text = curl(url("/metrics")).body;
            return metric(text, "jal_serve_running_sequences") == 0 &&
                   metric(text, "jal_serve_requests_cancelled_total") == cancelled;
        });
    }
    static std::string greedy_request(bool stream)
    {
        return json({{"model", kModelId},
                     {"prompt", {1, 2, 3}},
                     {"max_tokens", kGreedyTokens},
                     {"temperature", 0},
                     {"stream", stream},
                     {"stream_options", {{"include_usage", true}}}})
            .dump();
    }

    static jal::test::EmuProcess* emu_;
    static std::string* dir_;
    static std::vector<int32_t>* greedy_;  // jal-run's greedy ids after [1, 2, 3]
    static ServeProcess* server_;
};
jal::test::EmuProcess* JalServe::emu_ = nullptr;
std::string* JalServe::dir_ = nullptr;
std::vector<int32_t>* JalServe::greedy_ = nullptr;
ServeProcess* JalServe::server_ = nullptr;

TEST_F(JalServe, HealthAndModels)
{
    const HttpReply health = curl(url("/health"));
    EXPECT_EQ(health.status, 200u);
    EXPECT_EQ(json::parse(health.body)["status"], "ok");
    const HttpReply models = curl(url("/v1/models"));
    ASSERT_EQ(models.status, 200u) << models.body;
    const json m = json::parse(models.body);
    EXPECT_EQ(m["object"], "list");
    ASSERT_EQ(m["data"].size(), 1u);
    EXPECT_EQ(m["data"][0]["id"], kModelId);
    EXPECT_EQ(m["data"][0]["max_model_len"], kContext);
}

TEST_F(JalServe, GreedyIdsEqualJalRuns)
{
    const HttpReply r = post(url("/v1/completions"), greedy_request(false));
    ASSERT_EQ(r.status, 200u) << r.body;
    const json j = json::parse(r.body);
    EXPECT_EQ(j["object"], "text_completion");
    EXPECT_EQ(j["model"], kModelId);
    ASSERT_EQ(j["choices"].size(), 1u);
    EXPECT_EQ(j["choices"][0]["token_ids"].get<std::vector<int32_t>>(), *greedy_);
    EXPECT_EQ(j["choices"][0]["text"], "");
    EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
    EXPECT_EQ(j["usage"]["prompt_tokens"], 3);
    EXPECT_EQ(j["usage"]["completion_tokens"], kGreedyTokens);
    EXPECT_EQ(j["usage"]["total_tokens"], 3 + kGreedyTokens);
}

TEST_F(JalServe, StreamIsWellFormed)
{
    const HttpReply r = post(url("/v1/completions"), greedy_request(true));
    ASSERT_EQ(r.status, 200u) << r.body;
    EXPECT_NE(r.headers.find("text/event-stream"), std::string::npos) << r.headers;
    const Events e = parse_events(r.body);
    ASSERT_TRUE(e.well_formed && e.done) << r.body;
    ASSERT_GE(e.chunks.size(), 2u);
    std::vector<int32_t> ids;
    for (size_t i = 0; i + 1 < e.chunks.size(); i++) {
        const json& choice = e.chunks[i]["choices"][0];
        for (int32_t id : choice["token_ids"]) ids.push_back(id);
        const bool last = i + 2 == e.chunks.size();
        EXPECT_EQ(choice["finish_reason"], last ? json("length") : json(nullptr)) << i;
    }
    EXPECT_EQ(ids, *greedy_);
    const json& usage = e.chunks.back();
    EXPECT_TRUE(usage["choices"].empty());
    EXPECT_EQ(usage["usage"]["completion_tokens"], kGreedyTokens);
}

struct BadRequest {
    const char* path;
    std::string body;
    const char* message;  // a part of the error message
    const char* param;    // nullptr: null
};

TEST_F(JalServe, MalformedRequestsGetTheir400)
{
    const std::string too_long = json({{"prompt", std::vector<int>(kContext + 1, 1)}}).dump();
    const std::vector<BadRequest> cases = {
        {"/v1/completions", R"({"prompt": [1, 2, 3)", "not valid JSON", nullptr},
        {"/v1/completions", R"([1, 2, 3])", "must be a JSON object", nullptr},
        {"/v1/completions", R"({"max_tokens": 4})", "'prompt' is required", "prompt"},
        {"/v1/completions", R"({"prompt": 5})", "'prompt' must be a string or an array", "prompt"},
        {"/v1/completions", R"({"prompt": [1, "a"]})", "array of token ids", "prompt"},
        {"/v1/completions", R"({"prompt": []})", "'prompt' must not be empty", "prompt"},
        {"/v1/completions", R"({"prompt": [1], "max_tokens": 0})",
         "'max_tokens' must be at least 1", "max_tokens"},
        {"/v1/completions", R"({"prompt": [1], "max_tokens": "8"})",
         "'max_tokens' must be an integer", "max_tokens"},
        {"/v1/completions", R"({"prompt": [1, 2, 3], "max_tokens": 5000})",
         "need 5002 positions; the context holds 4096", "max_tokens"},
        {"/v1/completions", too_long, "the prompt has 4097 tokens; the context holds 4096",
         "prompt"},
        {"/v1/completions", R"({"prompt": [1], "model": "gpt-4"})",
         "the model 'gpt-4' does not exist; this server serves 'serve-test'", "model"},
        {"/v1/completions", R"({"prompt": "Hello"})",
         "this model has no vocabulary; send the prompt as an array of token ids", "prompt"},
        {"/v1/completions", R"({"prompt": [1, 2, 999]})",
         "token id 999 in 'prompt' is not below the vocabulary size 256", "prompt"},
        {"/v1/completions", R"({"prompt": [1], "temperature": -1})",
         "'temperature' must be between 0 and 2", "temperature"},
        {"/v1/completions", R"({"prompt": [1], "stream": "yes"})", "'stream' must be a boolean",
         "stream"},
        {"/v1/completions", R"({"prompt": [1], "stop": ["x"]})", "'stop' strings cannot match",
         "stop"},
        {"/v1/completions", R"({"prompt": [1], "n": 2})", "only 'n' = 1 is supported", "n"},
        {"/v1/chat/completions", R"({"messages": [{"role": "user", "content": "hi"}]})",
         "this model has no vocabulary, so it cannot chat", "messages"},
        {"/v1/chat/completions", R"({"messages": "hi"})", "'messages' must be a non-empty array",
         "messages"},
    };
    for (const BadRequest& c : cases) {
        const HttpReply r = post(url(c.path), c.body);
        const std::string what = std::string(c.path) + " " + c.body.substr(0, 80);
        EXPECT_EQ(r.status, 400u) << what << "\n" << r.body;
        const json e = json::parse(r.body, nullptr, false);
        ASSERT_TRUE(e.contains("error")) << what << "\n" << r.body;
        EXPECT_NE(e["error"]["message"].get<std::string>().find(c.message), std::string::npos)
            << what << "\n"
            << r.body;
        EXPECT_EQ(e["error"]["type"], "invalid_request_error") << what;
        EXPECT_EQ(e["error"]["param"], c.param ? json(c.param) : json(nullptr)) << what;
        EXPECT_TRUE(e["error"]["code"].is_null()) << what;
    }
}

TEST_F(JalServe, UnknownPathIs404AndWrongMethodIs405)
{
    const HttpReply missing = curl(url("/v1/embeddings"));
    EXPECT_EQ(missing.status, 404u);
    EXPECT_NE(missing.body.find("no such endpoint: /v1/embeddings"), std::string::npos);
    const HttpReply get = curl(url("/v1/completions"));
    EXPECT_EQ(get.status, 405u);
    EXPECT_NE(get.body.find("/v1/completions takes POST"), std::string::npos) << get.body;
    EXPECT_NE(get.headers.find("Allow: POST"), std::string::npos) << get.headers;
    const HttpReply post_health = post(url("/health"), "{}");
    EXPECT_EQ(post_health.status, 405u);
}

TEST_F(JalServe, OpenAiNodeClient)
{
    const CommandResult fetch =
        run_command({std::string(JAL_SOURCE_DIR) + "/scripts/fetch-openai-node.sh"}, {},
                    std::chrono::seconds(300));
    ASSERT_EQ(fetch.exit_code, 0) << "scripts/fetch-openai-node.sh failed:\n" << fetch.err;
    const std::string modules = fetch.out.substr(0, fetch.out.find('\n')) + "/node_modules";
    std::string ids;
    for (int32_t id : *greedy_) ids += (ids.empty() ? "" : ",") + std::to_string(id);
    const CommandResult r =
        run_command({"/usr/bin/env", "node", std::string(JAL_SERVE_TEST_DIR) + "/openai_client.js",
                     server_->url(), kModelId, ids},
                    {"NODE_PATH=" + modules}, std::chrono::seconds(120));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("all checks passed"), std::string::npos) << r.out << r.err;
}

// A client that hangs up mid-stream cancels its request: the sequence is freed.
TEST_F(JalServe, DisconnectMidStreamFreesTheSequence)
{
    const double cancelled =
        metric(curl(url("/metrics")).body, "jal_serve_requests_cancelled_total");
    ASSERT_GE(cancelled, 0);
    {
        RawConnection c(server_->port());
        c.post("/v1/completions",
               R"({"prompt": [1, 2, 3], "max_tokens": 4000, "temperature": 0, "stream": true})");
        ASSERT_TRUE(c.read_until("\"token_ids\":[")) << c.received();
        EXPECT_EQ(metric(curl(url("/metrics")).body, "jal_serve_running_sequences"), 1);
    }  // closed here, the reply far from complete
    std::string text;
    EXPECT_TRUE(freed_and_counted(cancelled + 1, text)) << text;
    // The server still serves.
    EXPECT_EQ(post(url("/v1/completions"), greedy_request(false)).status, 200u);
}

// A whole (not streamed) reply is cancelled too when its client closes the connection.
TEST_F(JalServe, DisconnectBeforeAWholeReplyFreesTheSequence)
{
    const double cancelled =
        metric(curl(url("/metrics")).body, "jal_serve_requests_cancelled_total");
    ASSERT_GE(cancelled, 0);
    {
        RawConnection c(server_->port());
        c.post("/v1/completions", R"({"prompt": [1, 2, 3], "max_tokens": 4000})");
        ASSERT_TRUE(wait_for([&] {
            return metric(curl(url("/metrics")).body, "jal_serve_running_sequences") == 1;
        }));
    }
    std::string text;
    EXPECT_TRUE(freed_and_counted(cancelled + 1, text)) << text;
}

// --max-concurrency 1: while one request runs, another gets 429; once it is gone, 200.
TEST_F(JalServe, OverTheConcurrencyLimitIs429)
{
    std::unique_ptr<ServeProcess> one(start_server({"--max-concurrency", "1"}));
    const std::string completions = one->url() + "/v1/completions";
    {
        RawConnection c(one->port());
        c.post("/v1/completions",
               R"({"prompt": [1, 2, 3], "max_tokens": 4000, "temperature": 0, "stream": true})");
        ASSERT_TRUE(c.read_until("\"token_ids\":[")) << c.received();
        const HttpReply busy = post(completions, greedy_request(false));
        EXPECT_EQ(busy.status, 429u) << busy.body;
        const json e = json::parse(busy.body, nullptr, false);
        EXPECT_EQ(e["error"]["type"], "rate_limit_error") << busy.body;
        EXPECT_NE(busy.body.find("limit of 1 concurrent requests"), std::string::npos);
    }
    EXPECT_TRUE(wait_for([&] {
        return metric(curl(one->url() + "/metrics").body, "jal_serve_running_sequences") == 0;
    }));
    EXPECT_EQ(post(completions, greedy_request(false)).status, 200u);
    EXPECT_EQ(one->stop(SIGTERM), "") << one->output();
}

// SIGTERM while a reply streams and another connection idles: the reply completes, the idle
// connection is closed, and the server exits with status 0.
TEST_F(JalServe, SigtermFinishesTheRequestInFlight)
{
    std::unique_ptr<ServeProcess> s(start_server({}));
    RawConnection idle(s->port());
    RawConnection c(s->port());
    c.post("/v1/completions",
           R"({"prompt": [1, 2, 3], "max_tokens": 300, "temperature": 0, "stream": true})");
    ASSERT_TRUE(c.read_until("\"token_ids\":[")) << c.received();
    ::kill(s->pid(), SIGTERM);
    ASSERT_TRUE(c.read_until("data: [DONE]\n\n\r\n0\r\n\r\n")) << c.received();
    EXPECT_NE(c.received().find("\"finish_reason\":\"length\""), std::string::npos);
    EXPECT_FALSE(idle.read_until("HTTP/"));    // closed without a word
    EXPECT_EQ(s->stop(0), "") << s->output();  // it exits by itself
    EXPECT_NE(s->output().find("jal-serve: stopped"), std::string::npos) << s->output();
    // New connections are refused once it has stopped listening.
    EXPECT_THROW(RawConnection{s->port()}, std::runtime_error);
}

}  // namespace
