// jal-serve with a DeepSeek-V3 (deepseek2) file: the ds-tiny preset (no vocabulary: token ids
// in and out), several requests at once, each reply the greedy continuation jal-run gives
// for its prompt alone.
#include <csignal>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fixture/emu_process.hpp>
#include <fixture/run_command.hpp>

#include "made_model.hpp"
#include "serve_http.hpp"
#include "serve_process.hpp"

namespace {

using jal::test::bin_path;
using jal::test::CommandResult;
using jal::test::curl;
using jal::test::HttpReply;
using jal::test::MadeModel;
using jal::test::metric;
using jal::test::post;
using jal::test::run_command;
using jal::test::ServeProcess;
using nlohmann::json;

constexpr unsigned kTokens = 8;

std::string ids_csv(const std::vector<int32_t>& ids)
{
    std::string s;
    for (size_t i = 0; i < ids.size(); i++) s += (i ? "," : "") + std::to_string(ids[i]);
    return s;
}

TEST(JalServeDeepseek, ConcurrentRequestsGiveJalRunsTokens)
{
    jal::test::EmuOptions eo;
    eo.extra_args = {"--fw", "native"};
    jal::test::EmuProcess emu(eo);
    const MadeModel mk("jal-serve-ds", "ds.gguf", {"--preset", "ds-tiny", "--seed", "5"});
    ASSERT_EQ(mk.mkmodel.exit_code, 0) << mk.mkmodel.err;
    const std::string& model = mk.path;

    const std::vector<std::vector<int32_t>> prompts = {
        {1, 2, 3, 4, 5, 6, 7, 8}, {9, 200, 31}, {40, 41, 42, 43, 250}};
    std::vector<std::vector<int32_t>> want;
    for (const auto& p : prompts) {
        const CommandResult r = run_command({bin_path("jal-run"), model, "--prompt-ids", ids_csv(p),
                                             "--n", std::to_string(kTokens), "--json"},
                                            {emu.env()});
        ASSERT_EQ(r.exit_code, 0) << r.err;
        want.push_back(json::parse(r.out)["tokens"]);
    }
    ASSERT_NE(want[0], want[1]) << "the prompts should lead apart";

    ServeProcess server(bin_path("jal-serve"), {model, "--emu-dir", emu.socket_dir()});
    std::vector<HttpReply> replies(prompts.size());
    std::vector<std::thread> clients;
    for (size_t i = 0; i < prompts.size(); i++)
        clients.emplace_back([&, i] {
            const std::string request =
                json({{"prompt", prompts[i]}, {"max_tokens", kTokens}, {"temperature", 0}}).dump();
            replies[i] = post(server.url() + "/v1/completions", request);
        });
    for (std::thread& t : clients) t.join();
    for (size_t i = 0; i < prompts.size(); i++) {
        ASSERT_EQ(replies[i].status, 200u) << replies[i].body;
        EXPECT_EQ(
            json::parse(replies[i].body)["choices"][0]["token_ids"].get<std::vector<int32_t>>(),
            want[i])
            << "prompt " << i;
    }
    EXPECT_EQ(metric(curl(server.url() + "/metrics").body, "jal_serve_generation_tokens_total"),
              kTokens * prompts.size());
    EXPECT_EQ(server.stop(SIGTERM), "") << server.output();
    EXPECT_EQ(emu.stop(), "");
}

}  // namespace
