// A fabric domain of two jal-emu processes on this host, joined over libfabric's tcp
// provider: bytes written on chip 0 are read back through chip 1 (and the other way), byte
// for byte, with the links' counters to show for it; a peer that never comes, a bad domain
// file and a peer that is killed all end in clear errors, never a hang.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fixture/emu_process.hpp>
#include <fixture/run_command.hpp>
#include <jal/chip_function.hpp>

#include "../firmware/console_client.hpp"
#include "links_up.hpp"
#include "random_hex.hpp"
#include "two_process_domain.hpp"

namespace {

using fwtest::ConsoleClient;
using jal::test::EmuProcess;
using jal::test::random_hex;
using nlohmann::json;
using namespace std::chrono_literals;

// Processes a (chip 0) and b (chip 1), joined by two scale-up links.
std::string write_domain_file()
{
    return jal::test::write_two_process_domain("domain", jal::test::kTwoScaleUpLinks);
}

std::unique_ptr<EmuProcess> start(const std::string& file, const std::string& process,
                                  const std::string& join_timeout = "60")
{
    jal::test::EmuOptions o;
    o.extra_args = {"--fw",           "native",     "--domain",         file, "--process", process,
                    "--join-timeout", join_timeout, "--fabric-timeout", "2"};
    return std::make_unique<EmuProcess>(o);
}

// Asks `console` for the domain's state until it is no longer joining.
json settled(ConsoleClient& console)
{
    const auto give_up = std::chrono::steady_clock::now() + jal::test::kBootTimeout;
    for (;;) {
        json j = console.ask("fabric");
        if (j.value("state", "") != "joining" && j.contains("state")) return j;
        if (std::chrono::steady_clock::now() > give_up) return j;  // the caller's check fails
    }
}

TEST(FabricDomain, ChipOneReadsAndWritesChipZerosMemory)
{
    const std::string file = write_domain_file();
    auto a = start(file, "a");
    auto b = start(file, "b");
    ConsoleClient chip0(a->socket_dir() + "/jal0.console");
    ConsoleClient chip1(b->socket_dir() + "/jal0.console");
    ASSERT_EQ(settled(chip0)["state"], "joined") << settled(chip0).dump();
    ASSERT_EQ(settled(chip1)["state"], "joined") << settled(chip1).dump();
    EXPECT_EQ(chip1.ask("fabric")["chip"], 1);
    jal::test::links_up(chip1, 2);

    // Written on chip 0, read through chip 1's link.
    const std::string data = random_hex(4096, 1);
    ASSERT_TRUE(chip0.ask("poke 0x12345 " + data)["ok"]);
    const json read = chip1.ask("rpeek 0 0x12345 4096");
    ASSERT_TRUE(read["ok"]) << read.dump();
    EXPECT_EQ(read["hex"], data);
    // 4096 bytes at 50 GB/s and a request and its data across the link: never less.
    EXPECT_GE(read["end_ns"].get<std::uint64_t>() - read["start_ns"].get<std::uint64_t>(),
              82u + 2000u);

    // Written through chip 1, found in chip 0.
    const std::string back = random_hex(1000, 2);
    ASSERT_TRUE(chip1.ask("rpoke 0 0x800000 " + back)["ok"]);
    EXPECT_EQ(chip0.ask("peek 0x800000 1000")["hex"], back);

    const json links = chip1.ask("links")["links"];
    ASSERT_EQ(links.size(), 2u);
    std::uint64_t rx = 0, tx = 0;
    for (const json& l : links) {
        EXPECT_EQ(l["state"], "up");
        EXPECT_EQ(l["peer_chip"], 0);
        EXPECT_EQ(l["lanes"], 4);
        EXPECT_EQ(l["gbytes_per_s"], 50.0);
        rx += l["rx_bytes"].get<std::uint64_t>();
        tx += l["tx_bytes"].get<std::uint64_t>();
    }
    EXPECT_EQ(rx, 4096u);
    EXPECT_EQ(tx, 1000u);

    // The firmware's telemetry counts the links it trained (sampled every 1 ms tick).
    ASSERT_NO_FATAL_FAILURE(jal::test::expect_telemetry_links_up(0, b->open_options(), 2));

    // Past the end of chip 0's memory, and to a chip no link reaches: refused, said why.
    const json past = chip1.ask("rpeek 0 0x3600000000 16");
    EXPECT_FALSE(past["ok"]);
    EXPECT_NE(past["error"].get<std::string>().find("outside its memory"), std::string::npos)
        << past.dump();
    const json none = chip1.ask("rpeek 5 0 16");
    EXPECT_FALSE(none["ok"]);
    EXPECT_NE(none["error"].get<std::string>().find("no link"), std::string::npos) << none.dump();
    EXPECT_EQ(a->stop(), "");
    EXPECT_EQ(b->stop(), "");
}

TEST(FabricDomain, APeerThatNeverComesFailsTheJoinByName)
{
    const std::string file = write_domain_file();
    auto a = start(file, "a", "0.5");
    ConsoleClient chip0(a->socket_dir() + "/jal0.console");
    const json j = settled(chip0);
    EXPECT_EQ(j["state"], "failed");
    EXPECT_NE(j["error"].get<std::string>().find("no answer from b (127.0.0.1:"), std::string::npos)
        << j.dump();
    const json read = chip0.ask("rpeek 1 0 16");
    EXPECT_FALSE(read["ok"]);
    // Its links never trained: the far end never answered.
    EXPECT_NE(read["error"].get<std::string>().find("no answer from its peer"), std::string::npos)
        << read.dump();
    // The chip serves on its own meanwhile.
    EXPECT_TRUE(chip0.ask("status")["ok"]);
}

TEST(FabricDomain, AKilledPeerIsAnErrorNotAHang)
{
    const std::string file = write_domain_file();
    auto a = start(file, "a");
    auto b = start(file, "b");
    ConsoleClient chip1(b->socket_dir() + "/jal0.console");
    ASSERT_EQ(settled(chip1)["state"], "joined");
    jal::test::links_up(chip1, 2);
    ASSERT_TRUE(chip1.ask("rpeek 0 0 8")["ok"]);
    kill(a->pid(), SIGKILL);
    // Every read fails from the moment b has found a gone (at the latest after 2 s of
    // silence, --fabric-timeout); none waits longer than that.
    json read;
    const auto give_up = std::chrono::steady_clock::now() + jal::test::kBootTimeout;
    do {
        read = chip1.ask("rpeek 0 0 8");
    } while (read["ok"] && std::chrono::steady_clock::now() < give_up);
    ASSERT_FALSE(read["ok"]) << "reads from a killed peer kept succeeding";
    EXPECT_NE(read["error"].get<std::string>().find("process a"), std::string::npos) << read.dump();
    const json peers = chip1.ask("fabric")["peers"];
    ASSERT_EQ(peers.size(), 1u);
    EXPECT_EQ(peers[0]["state"], "dead");
    const json links = chip1.ask("links")["links"];
    for (const json& l : links) EXPECT_EQ(l["state"], "down") << l.dump();
    EXPECT_EQ(b->stop(), "");
}

TEST(FabricDomain, BadDomainFilesAreRefusedWithTheReason)
{
    const std::string emu = jal::test::bin_path("jal-emu");
    const std::string bad = ::testing::TempDir() + "bad-domain.json";
    std::ofstream(bad) << R"({"processes": [{"name": "a", "address": "h", "chips": [0]}]})";
    auto r = jal::test::run_command({emu, "--domain", bad, "--process", "a"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("is not host:port"), std::string::npos) << r.err;
    const std::string file = write_domain_file();
    r = jal::test::run_command({emu, "--domain", file, "--process", "zz"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("names no process \"zz\""), std::string::npos) << r.err;
    r = jal::test::run_command({emu, "--domain", file});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("--process"), std::string::npos) << r.err;
    r = jal::test::run_command({emu, "--domain", file, "--process", "a", "--chips", "2"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("--chips 2"), std::string::npos) << r.err;
}

}  // namespace
