// Peer memory between two jal-emu processes joined over libfabric's tcp provider on
// loopback: chip 1 (process b) maps a buffer of chip 0 (process a), copies through it byte
// for byte, and when process a is killed the next remote copy fails LINK_DOWN within the
// domain's timeout while chip 1's local work goes on.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fixture/emu_process.hpp>
#include <jal/jal.hpp>

#include "../firmware/console_client.hpp"
#include "links_up.hpp"
#include "peer_side.hpp"
#include "two_process_domain.hpp"

namespace {

using fwtest::ConsoleClient;
using jal::runtime::Context;
using jal::runtime::Device;
using jal::runtime::Memory;
using jal::test::Side;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr uint64_t kPage = JAL_PAGE_SIZE;

std::string write_domain_file()
{
    return jal::test::write_two_process_domain(
        "peer-tcp", R"([{"kind": "scale-up", "a": [0, 0], "b": [1, 0]}])");
}

std::unique_ptr<jal::test::EmuProcess> start(const std::string& file, const std::string& process)
{
    jal::test::EmuOptions o;
    o.extra_args = {"--fw",      "native", "--domain",         file,
                    "--process", process,  "--fabric-timeout", "2"};
    return std::make_unique<jal::test::EmuProcess>(o);
}

TEST(PeerMemoryDomain, TwoProcessesOverTcpAndAPeerThatDies)
{
    const std::string file = write_domain_file();
    auto a = start(file, "a");
    auto b = start(file, "b");
    ConsoleClient console1(b->socket_dir() + "/jal0.console");
    jal::test::links_up(console1, 1);

    auto dev0 = std::make_unique<Device>(0, a->socket_dir());
    Device dev1(0, b->socket_dir());
    auto ctx0 = std::make_unique<Context>(*dev0);
    auto theirs = std::make_unique<Memory>(*ctx0, 2 * kPage, JAL_PLACE_SLICE, 1);
    const jal_peer_export_t e = theirs->export_range(0, 2 * kPage);
    EXPECT_EQ(e.chip, 0u);
    EXPECT_EQ(e.pages, 2u);

    Side one(dev1, 2 * kPage);
    Memory mine(one.ctx, kPage, JAL_PLACE_SLICE, 1);
    Memory peer = Memory::import_peer(one.ctx, e);  // as another process would, given `e`
    std::vector<std::byte> data(kPage + 4097);
    for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<std::byte>(i * 31 + 7);

    // Across the page boundary of chip 0's buffer, and back, over libfabric.
    ASSERT_EQ(one.to_device(peer.va() + kPage / 2, data), uint32_t{JAL_STATUS_OK});
    ASSERT_EQ(one.to_host(peer.va() + kPage / 2, data.size()), uint32_t{JAL_STATUS_OK});
    EXPECT_TRUE(one.host_equals(data));
    const json pm = console1.ask("peer-memory");
    EXPECT_GE(pm["link_ns"].get<double>() * 50, pm["bytes"].get<double>()) << pm.dump();

    // Process a dies: the next remote copy fails, never hangs; local work goes on.
    kill(a->pid(), SIGKILL);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(one.to_host(peer.va(), 4096), uint32_t{JAL_STATUS_LINK_DOWN});
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);
    const std::vector<std::byte> head(data.begin(), data.begin() + 4096);
    ASSERT_EQ(one.to_device(mine.va(), head), uint32_t{JAL_STATUS_OK});
    ASSERT_EQ(one.to_host(mine.va(), head.size()), uint32_t{JAL_STATUS_OK});
    EXPECT_TRUE(one.host_equals(head));

    // chip 0's handles are released against a dead emulator: errors, not hangs.
    theirs.reset();
    ctx0.reset();
    dev0.reset();
}

}  // namespace
