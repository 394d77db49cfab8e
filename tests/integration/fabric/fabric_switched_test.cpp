// Switched planes end to end: a tray of 8 chips in one jal-emu (chip 0 writes into chip 7
// and reads it back through the planes, byte for byte, both ends' link counters and the
// modelled time to show for it), a domain of two jal-emu processes whose scale-up ports are
// switched (tcp on loopback), and `jal-bench fabric --json` on tiny sizes.
#include <arpa/inet.h>
#include <netinet/in.h>
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
#include <tools/common/emu_process.hpp>

namespace {

using fwtest::ConsoleClient;
using jal::test::EmuProcess;
using jal::test::random_hex;
using nlohmann::json;

// Until `console`'s chip has its 12 scale-up planes up (the firmware trains them at boot:
// the switch answers).
json planes_up(ConsoleClient& console)
{
    return jal::test::links_up(console, 12, [](const json& l) { return l["switched"] == true; });
}

std::uint64_t sum(const json& links, const char* key)
{
    std::uint64_t n = 0;
    for (const json& l : links) n += l[key].get<std::uint64_t>();
    return n;
}

TEST(SwitchedTray, ChipZeroWritesChipSevenAndReadsItBack)
{
    jal::test::EmuOptions o;
    o.chips = 8;
    o.extra_args = {"--fw", "native"};
    EmuProcess emu(o);
    ConsoleClient chip0(emu.socket_dir() + "/jal0.console");
    ConsoleClient chip7(emu.socket_dir() + "/jal7.console");
    const json links = planes_up(chip0);
    planes_up(chip7);
    ASSERT_EQ(links.size(), 12u);
    EXPECT_EQ(links[0]["kind"], "scale-up");
    EXPECT_TRUE(links[0]["peer_chip"].is_null()) << "a plane has no single peer";

    const std::string data = random_hex(4096, 7);
    const json w = chip0.ask("rpoke 7 0x40000 " + data);
    ASSERT_TRUE(w["ok"]) << w.dump();
    EXPECT_EQ(w["ports"], 12) << "striped over every plane";
    EXPECT_EQ(chip7.ask("peek 0x40000 4096")["hex"], data) << "the bytes are in chip 7";
    const json r = chip0.ask("rpeek 7 0x40000 4096");
    ASSERT_TRUE(r["ok"]) << r.dump();
    EXPECT_EQ(r["hex"], data);
    // Never cheaper than 4096 B at 600 GB/s plus the flight (two for the read).
    const auto took = [](const json& a) {
        return a["end_ns"].get<std::uint64_t>() - a["start_ns"].get<std::uint64_t>();
    };
    EXPECT_GE(took(w), 4096u / 600 + 1000);
    EXPECT_GE(took(r), 4096u / 600 + 2000);
    // Both ends counted: chip 0 sent and received 4096 B, and so did chip 7 in return.
    const json after0 = chip0.ask("links")["links"], after7 = chip7.ask("links")["links"];
    EXPECT_EQ(sum(after0, "tx_bytes"), 4096u);
    EXPECT_EQ(sum(after0, "rx_bytes"), 4096u);
    EXPECT_EQ(sum(after7, "rx_bytes"), 4096u);
    EXPECT_EQ(sum(after7, "tx_bytes"), 4096u);
    // The firmware trained the 12 planes at boot (the switch answers) and its telemetry
    // counts them (sampled every 1 ms tick).
    ASSERT_NO_FATAL_FAILURE(jal::test::expect_telemetry_links_up(7, emu.open_options(), 12));
    // A chip outside the tray answers on no plane.
    const json none = chip0.ask("rpeek 8 0 16");
    EXPECT_FALSE(none["ok"]);
    EXPECT_NE(none["error"].get<std::string>().find("does not answer"), std::string::npos)
        << none.dump();
}

TEST(SwitchedTray, ALoneChipHasNoFabric)
{
    jal::test::EmuOptions o;
    o.extra_args = {"--fw", "native"};
    EmuProcess emu(o);
    ConsoleClient chip0(emu.socket_dir() + "/jal0.console");
    EXPECT_TRUE(chip0.ask("links")["links"].empty());
    const json r = chip0.ask("rpeek 1 0 16");
    EXPECT_FALSE(r["ok"]);
    EXPECT_NE(r["error"].get<std::string>().find("no fabric domain"), std::string::npos)
        << r.dump();
}

TEST(SwitchedDomain, TwoProcessesReachEachOtherThroughThePlanes)
{
    const std::string file =
        ::testing::TempDir() + "switched-" + std::to_string(getpid()) + ".json";
    std::ofstream(file) << R"({"provider": "tcp", "scale_up": "switched", "processes": [
        {"name": "a", "address": "127.0.0.1:)"
                        << jal::tools::free_loopback_port() << R"(", "chips": [0, 1]},
        {"name": "b", "address": "127.0.0.1:)"
                        << jal::tools::free_loopback_port() << R"(", "chips": [2]}]})";
    auto start = [&](const std::string& process) {
        jal::test::EmuOptions o;
        o.chips = process == "a" ? 2 : 1;
        o.extra_args = {"--fw",      "native", "--domain",         file,
                        "--process", process,  "--fabric-timeout", "5"};
        return std::make_unique<EmuProcess>(o);
    };
    auto a = start("a");
    auto b = start("b");
    ConsoleClient chip0(a->socket_dir() + "/jal0.console");
    ConsoleClient chip2(b->socket_dir() + "/jal0.console");
    planes_up(chip0);
    planes_up(chip2);
    const std::string data = random_hex(2048, 3);
    ASSERT_TRUE(chip0.ask("poke 0x9000 " + data)["ok"]);
    // Until b has joined, chip 0 does not answer chip 2 on the planes.
    json r;
    const auto give_up = std::chrono::steady_clock::now() + jal::test::kBootTimeout;
    do {
        r = chip2.ask("rpeek 0 0x9000 2048");
    } while (!r["ok"] && std::chrono::steady_clock::now() < give_up);
    ASSERT_TRUE(r["ok"]) << r.dump();
    EXPECT_EQ(r["hex"], data);
    EXPECT_EQ(r["ports"], 12);
    EXPECT_GE(r["end_ns"].get<std::uint64_t>() - r["start_ns"].get<std::uint64_t>(),
              2048u / 600 + 2000);
    // Another process's chip: only this end's ports are charged.
    EXPECT_EQ(sum(chip2.ask("links")["links"], "rx_bytes"), 2048u);
    EXPECT_EQ(sum(chip0.ask("links")["links"], "tx_bytes"), 0u);
    // Chip 1 of process a reaches chip 2 too, by libfabric; chip 0 reaches chip 1 by copy.
    const std::string back = random_hex(64, 4);
    ConsoleClient chip1(a->socket_dir() + "/jal1.console");
    planes_up(chip1);
    ASSERT_TRUE(chip1.ask("rpoke 2 0x100 " + back)["ok"]);
    EXPECT_EQ(chip2.ask("peek 0x100 64")["hex"], back);
    ASSERT_TRUE(chip0.ask("rpoke 1 0x200 " + back)["ok"]);
    EXPECT_EQ(chip1.ask("peek 0x200 64")["hex"], back);
    EXPECT_EQ(a->stop(), "");
    EXPECT_EQ(b->stop(), "");
}

TEST(JalBenchFabric, PrintsTheFiguresAsJson)
{
    const auto r = jal::test::run_command({jal::test::bin_path("jal-bench"), "fabric", "--json",
                                           "-q", "--sizes", "4K,64K", "--collective-sizes", "4K,1M",
                                           "--seconds", "0.02"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const json d = json::parse(r.out);
    EXPECT_EQ(d["provider"], "tcp");
    for (const char* k :
         {"raw_gbps", "chip_gbps", "chip_vs_raw", "raw_latency_us", "chip_latency_us"})
        EXPECT_GT(d.at(k).get<double>(), 0) << k;
    for (const char* k : {"allreduce_busbw_fraction_8", "allreduce_busbw_fraction_128",
                          "alltoall_busbw_fraction_8", "alltoall_busbw_fraction_128"}) {
        EXPECT_GT(d.at(k).get<double>(), 0) << k;
        EXPECT_LE(d.at(k).get<double>(), 1) << k;
    }
    ASSERT_EQ(d["measured"].size(), 2u);
    EXPECT_EQ(d["measured"][1]["bytes"], 65536);
    for (const char* c : {"all_reduce", "all_to_all"})
        for (const char* n : {"8", "128"}) {
            ASSERT_EQ(d["modelled"][c][n].size(), 2u) << c << n;
            for (const json& row : d["modelled"][c][n]) {
                EXPECT_GT(row["busbw_fraction"].get<double>(), 0);
                EXPECT_LE(row["busbw_fraction"].get<double>(), 1);
                EXPECT_GT(row["time_us"].get<double>(), 1.0) << "at least one flight";
            }
        }
    EXPECT_EQ(d["modelled"]["moe_low_latency"].size(), 2u);
    // Bad input is a clear error.
    const auto bad =
        jal::test::run_command({jal::test::bin_path("jal-bench"), "fabric", "--sizes", "4X"});
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("\"4X\" is not a size"), std::string::npos) << bad.err;
    const auto shm =
        jal::test::run_command({jal::test::bin_path("jal-bench"), "fabric", "--provider", "shm"});
    EXPECT_NE(shm.exit_code, 0);
    EXPECT_NE(shm.err.find("use tcp"), std::string::npos) << shm.err;
}

}  // namespace
