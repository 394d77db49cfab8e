// jal-serve over two chips of one jal-emu (--devices 0,1): each chip holds the whole model,
// requests go to the chip with the least work, and every reply is the same greedy
// continuation as jal-run's on either chip.
#include <chrono>
#include <csignal>
#include <memory>
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

constexpr unsigned kTokens = 6;

std::vector<int32_t> jal_run_greedy(const std::string& model, const jal::test::EmuProcess& emu,
                                    const char* device)
{
    const CommandResult r = run_command({bin_path("jal-run"), model, "--prompt-ids", "4,5,6", "--n",
                                         std::to_string(kTokens), "--json", "-d", device},
                                        {emu.env()});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out)["tokens"];
}

TEST(JalServeChips, RequestsSpreadOverTwoChipsAndAgreeWithJalRun)
{
    jal::test::EmuOptions eo;
    eo.chips = 2;
    eo.extra_args = {"--fw", "native"};
    jal::test::EmuProcess emu(eo);
    const MadeModel mk("jal-serve-chips", "chips.gguf", {"--preset", "tiny", "--seed", "6"});
    ASSERT_EQ(mk.mkmodel.exit_code, 0) << mk.mkmodel.err;
    const std::string& model = mk.path;
    const std::vector<int32_t> greedy = jal_run_greedy(model, emu, "0");
    ASSERT_EQ(greedy.size(), kTokens);
    EXPECT_EQ(jal_run_greedy(model, emu, "1"), greedy) << "the same model on either chip";

    ServeProcess server(bin_path("jal-serve"),
                        {model, "--emu-dir", emu.socket_dir(), "--devices", "0,1"});
    const std::string request =
        json({{"prompt", {4, 5, 6}}, {"max_tokens", kTokens}, {"temperature", 0}}).dump();
    // Eight at once: the least loaded chip takes each, so both get some.
    std::vector<HttpReply> replies(8);
    std::vector<std::thread> clients;
    for (HttpReply& reply : replies)
        clients.emplace_back([&] { reply = post(server.url() + "/v1/completions", request); });
    for (std::thread& t : clients) t.join();
    for (const HttpReply& r : replies) {
        ASSERT_EQ(r.status, 200u) << r.body;
        EXPECT_EQ(json::parse(r.body)["choices"][0]["token_ids"].get<std::vector<int32_t>>(),
                  greedy);
    }
    const std::string m = curl(server.url() + "/metrics").body;
    EXPECT_EQ(metric(m, "jal_serve_chips"), 2);
    for (const char* chip : {"0", "1"}) {
        const std::string name =
            std::string("jal_serve_chip_requests_admitted_total\\{chip=\"") + chip + "\"\\}";
        EXPECT_GE(metric(m, name), 1) << "chip " << chip << " served nothing:\n" << m;
    }
    EXPECT_EQ(server.stop(SIGTERM), "") << server.output();
    EXPECT_EQ(emu.stop(), "");
}

}  // namespace
