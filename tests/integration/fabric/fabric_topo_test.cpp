// jalctl topo over a domain of two jal-emu processes (libfabric tcp on loopback): the
// matrix and the per-port report show the links the firmware trained, a lane killed by a
// fault leaves its port up on fewer lanes after the firmware retrains it, and `jalctl log`
// names the port, its lanes and the reason. A chip outside any domain says so.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fixture/emu_process.hpp>
#include <fixture/run_command.hpp>
#include <jal/hw/mgmt.h>

#include "../firmware/console_client.hpp"
#include "two_process_domain.hpp"
#include <tools/common/emu_process.hpp>

namespace {

using fwtest::ConsoleClient;
using jal::test::EmuProcess;
using nlohmann::json;

// Processes a (chip 0) and b (chip 1), joined by two scale-up links and one scale-out.
std::string write_domain_file()
{
    return jal::test::write_two_process_domain("topo",
                                               R"([{"kind": "scale-up", "a": [0, 0], "b": [1, 0]},
                   {"kind": "scale-up", "a": [0, 1], "b": [1, 1]},
                   {"kind": "scale-out", "a": [0, 0], "b": [1, 0]}])");
}

std::unique_ptr<EmuProcess> start(const std::string& file, const std::string& process,
                                  unsigned chips = 1)
{
    jal::test::EmuOptions o;
    o.chips = chips;
    o.extra_args = {"--fw",           "native", "--domain",         file, "--process", process,
                    "--join-timeout", "60",     "--fabric-timeout", "2"};
    return std::make_unique<EmuProcess>(o);
}

jal::test::CommandResult jalctl(const EmuProcess& emu, std::vector<std::string> args)
{
    args.insert(args.begin(), jal::test::bin_path("jalctl"));
    return jal::test::run_command(args, {emu.env()});
}

json jalctl_json(const EmuProcess& emu, std::vector<std::string> args)
{
    args.push_back("--json");
    const auto r = jalctl(emu, args);
    EXPECT_EQ(r.exit_code, 0) << r.err << r.out;
    return json::parse(r.out, nullptr, false);
}

// `jalctl topo --json`'s one chip once `want(chip)` holds (links come up once both
// processes have joined; a fault's retrain follows the console's request).
json topo_when(const EmuProcess& emu, const std::function<bool(const json&)>& want)
{
    const auto give_up = std::chrono::steady_clock::now() + jal::test::kBootTimeout;
    for (;;) {
        const json doc = jalctl_json(emu, {"topo", "--wait", "60"});
        const json chip = doc.value("chips", json::array()).empty() ? json() : doc["chips"][0];
        if (!chip.is_null() && want(chip)) return chip;
        if (std::chrono::steady_clock::now() > give_up) {
            ADD_FAILURE() << "topo never reached the expected state: " << doc.dump();
            return chip;
        }
    }
}

const json* port(const json& chip, unsigned number)
{
    for (const json& p : chip["ports"])
        if (p["port"] == number) return &p;
    return nullptr;
}

TEST(FabricTopo, ShowsTrainedLinksAndADegradedPortAfterALaneDies)
{
    const std::string file = write_domain_file();
    auto a = start(file, "a");
    auto b = start(file, "b");
    json chip = topo_when(*b, [](const json& c) { return c["ports_up"] == 3; });
    EXPECT_EQ(chip["chip"], 1);
    EXPECT_EQ(chip["ports_cabled"], 3);
    EXPECT_EQ(chip["ports_degraded"], 0);
    ASSERT_EQ(chip["peers"].size(), 1u) << chip.dump();
    const json& peer = chip["peers"][0];
    EXPECT_EQ(peer["chip"], 0);
    EXPECT_EQ(peer["kind"], "mixed");
    EXPECT_EQ(peer["ports_up"], 3);
    EXPECT_EQ(peer["lanes"], 12);
    EXPECT_EQ(peer["gbytes_per_s"], 150.0);
    const json* so = port(chip, 12);
    ASSERT_NE(so, nullptr) << chip.dump();
    EXPECT_EQ((*so)["kind"], "scale-out");
    EXPECT_EQ((*so)["peer_chip"], 0);
    EXPECT_EQ((*so)["state"], "up");
    EXPECT_EQ((*so)["lanes"], 4);
    for (const json& m : (*so)["margins_mui"]) EXPECT_GE(m.get<int>(), JAL_LINK_MARGIN_MIN_MUI);

    // A lane of scale-up port 1 dies; the firmware retrains the port before the command
    // completes: up on two lanes.
    const auto inject = jalctl(*b, {"debug", "inject", "link-lane", "1", "2"});
    ASSERT_EQ(inject.exit_code, 0) << inject.err << inject.out;
    chip = topo_when(*b, [](const json& c) { return c["ports_degraded"] == 1; });
    const json* p1 = port(chip, 1);
    ASSERT_NE(p1, nullptr);
    EXPECT_EQ((*p1)["state"], "degraded");
    EXPECT_EQ((*p1)["reason"], "bad_lanes");
    EXPECT_EQ((*p1)["lanes"], 2);
    EXPECT_EQ((*p1)["gbytes_per_s"], 25.0);
    EXPECT_EQ((*p1)["margins_mui"][2], 0);
    EXPECT_GE((*p1)["retrains"].get<int>(), 1);
    EXPECT_EQ(chip["peers"][0]["gbytes_per_s"], 125.0);

    // The outcome is in the log with its arguments.
    const json log = jalctl_json(*b, {"log"});
    bool found = false;
    for (const json& e : log["events"])
        if (e["name"] == "link_degraded") {
            found = true;
            EXPECT_EQ(e["fields"]["port"], 1);
            EXPECT_EQ(e["fields"]["lanes"], 2);
            EXPECT_EQ(e["fields"]["lanes_ok"], "0xb");
            EXPECT_EQ(e["fields"]["reason"], "bad_lanes");
        }
    EXPECT_TRUE(found) << log.dump();
    const auto text_log = jalctl(*b, {"log"});
    EXPECT_NE(text_log.out.find("port=1 lanes=2 lanes_ok=0xb reason=bad_lanes"), std::string::npos)
        << text_log.out;

    // The matrix: chip 1 reaches chip 0 over three ports, one of them degraded.
    const auto text = jalctl(*b, {"topo", "--ports"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("SX3 125G*"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("chip0:1"), std::string::npos) << text.out;

    // The bring-up console's way: scale-up port 0 of chip 0 loses lane 0 and lane 1.
    ConsoleClient chip0(a->socket_dir() + "/jal0.console");
    EXPECT_TRUE(chip0.ask("link 0 lane 0 bad")["ok"]);
    EXPECT_TRUE(chip0.ask("link 0 lane 1 bad")["ok"]);
    const json a_chip = topo_when(*a, [](const json& c) {
        const json* p = port(c, 0);
        return p && (*p)["lanes"] == 2 && (*p)["lanes_ok"] == "0xc";
    });
    EXPECT_EQ(a_chip["chip"], 0);
    EXPECT_FALSE(chip0.ask("link 0 lane 9 bad")["ok"]);

    // Telemetry counts the degraded port and the retrains.
    const json t = jalctl_json(*b, {"telemetry"});
    EXPECT_EQ(t["links_degraded"], 1);
    EXPECT_GE(t["link_retrains"].get<int>(), 1);
    EXPECT_EQ(a->stop(), "");
    EXPECT_EQ(b->stop(), "");
}

TEST(FabricTopo, BadFaultArgumentsAreRefused)
{
    const std::string file = write_domain_file();
    auto a = start(file, "a");
    // Port 5 is not cabled: the fault injector refuses it.
    const auto uncabled = jalctl(*a, {"debug", "inject", "link-lane", "5", "0", "--wait", "60"});
    EXPECT_NE(uncabled.exit_code, 0);
    EXPECT_NE(uncabled.err.find("the firmware refused fault link-lane: invalid field"),
              std::string::npos)
        << uncabled.err;
    const auto lane = jalctl(*a, {"debug", "inject", "link-lane", "0", "4"});
    EXPECT_NE(lane.exit_code, 0);
    EXPECT_NE(lane.err.find("link lane 4 is out of range (0-3)"), std::string::npos) << lane.err;
}

// Three chips of one process in a line (0-1-2): -d all gives each chip's row.
TEST(FabricTopo, ATrayInOneProcessShowsEveryChipsRow)
{
    const std::string file = ::testing::TempDir() + "tray-" + std::to_string(getpid()) + ".json";
    std::ofstream(file) << R"({"provider": "tcp", "processes": [
        {"name": "t", "address": "127.0.0.1:)"
                        << jal::tools::free_loopback_port() << R"(", "chips": [0, 1, 2]}],
      "links": [{"kind": "scale-up", "a": [0, 0], "b": [1, 0]},
                {"kind": "scale-up", "a": [1, 1], "b": [2, 1]}]})";
    auto t = start(file, "t", 3);
    const auto give_up = std::chrono::steady_clock::now() + jal::test::kBootTimeout;
    json doc;
    auto all_up = [](const json& d) {
        unsigned up = 0;
        for (const json& c : d.value("chips", json::array())) up += c["ports_up"].get<unsigned>();
        return up == 4;  // each link counts at both ends
    };
    do {
        doc = jalctl_json(*t, {"topo", "-d", "all", "--wait", "60"});
    } while (!all_up(doc) && std::chrono::steady_clock::now() < give_up);
    ASSERT_TRUE(all_up(doc)) << doc.dump();
    ASSERT_EQ(doc["chips"].size(), 3u);
    EXPECT_EQ(doc["chips"][1]["chip"], 1);
    EXPECT_EQ(doc["chips"][1]["peers"].size(), 2u) << "chip 1 reaches both ends of the line";
    EXPECT_EQ(doc["chips"][0]["peers"].size(), 1u);
    const auto text = jalctl(*t, {"topo", "-d", "all"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_NE(text.out.find("chip1    1  SU1 50G  X        SU1 50G"), std::string::npos)
        << text.out;
    EXPECT_NE(text.out.find("chip0    0  X        SU1 50G  -"), std::string::npos) << text.out;
}

TEST(FabricTopo, AChipOutsideADomainSaysSo)
{
    EmuProcess emu(jal::test::EmuOptions{});
    const auto text = jalctl(emu, {"topo", "--wait", "60"});
    ASSERT_EQ(text.exit_code, 0) << text.err;
    EXPECT_EQ(text.out, "no fabric links: this chip is not in a domain\n");
    const json doc = jalctl_json(emu, {"topo", "-d", "all"});
    ASSERT_EQ(doc["chips"].size(), 1u);
    EXPECT_EQ(doc["chips"][0]["ports_cabled"], 0);
    EXPECT_TRUE(doc["chips"][0]["ports"].empty());
}

}  // namespace
