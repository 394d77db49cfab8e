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
#include <cstring>
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
#include "two_process_domain.hpp"

namespace {

using fwtest::ConsoleClient;
using jal::runtime::Context;
using jal::runtime::Device;
using jal::runtime::HostBuffer;
using jal::runtime::Memory;
using jal::runtime::Queue;
using jal::runtime::Signal;
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

uint32_t copy(Device& dev, Queue& q, jal_copy_dir dir, uint64_t dst, uint64_t src, uint64_t n)
{
    Signal done(dev, 1);
    q.copy(dir, dst, src, n, &done);
    const auto r = done.wait_zero(30s);
    return r.satisfied ? uint32_t{r.status} : uint32_t{JAL_STATUS_TIMEOUT};
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

    Context ctx1(dev1);
    Queue q1(ctx1, 64);
    Memory mine(ctx1, kPage, JAL_PLACE_SLICE, 1);
    Memory peer = Memory::import_peer(ctx1, e);  // as another process would, given `e`
    HostBuffer host(dev1, 2 * kPage);
    std::vector<std::byte> data(kPage + 4097);
    for (size_t i = 0; i < data.size(); i++) data[i] = static_cast<std::byte>(i * 31 + 7);

    // Across the page boundary of chip 0's buffer, and back, over libfabric.
    std::memcpy(host.data(), data.data(), data.size());
    ASSERT_EQ(copy(dev1, q1, JAL_COPY_H2D, peer.va() + kPage / 2, host.bus_addr(), data.size()),
              uint32_t{JAL_STATUS_OK});
    std::memset(host.data(), 0, data.size());
    ASSERT_EQ(copy(dev1, q1, JAL_COPY_D2H, host.bus_addr(), peer.va() + kPage / 2, data.size()),
              uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(std::memcmp(host.data(), data.data(), data.size()), 0);
    const json pm = console1.ask("peer-memory");
    EXPECT_GE(pm["link_ns"].get<double>() * 50, pm["bytes"].get<double>()) << pm.dump();

    // Process a dies: the next remote copy fails, never hangs; local work goes on.
    kill(a->pid(), SIGKILL);
    const auto t0 = std::chrono::steady_clock::now();
    EXPECT_EQ(copy(dev1, q1, JAL_COPY_D2H, host.bus_addr(), peer.va(), 4096),
              uint32_t{JAL_STATUS_LINK_DOWN});
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 30s);
    std::memcpy(host.data(), data.data(), 4096);
    ASSERT_EQ(copy(dev1, q1, JAL_COPY_H2D, mine.va(), host.bus_addr(), 4096),
              uint32_t{JAL_STATUS_OK});
    std::memset(host.data(), 0, 4096);
    ASSERT_EQ(copy(dev1, q1, JAL_COPY_D2H, host.bus_addr(), mine.va(), 4096),
              uint32_t{JAL_STATUS_OK});
    EXPECT_EQ(std::memcmp(host.data(), data.data(), 4096), 0);

    // chip 0's handles are released against a dead emulator: errors, not hangs.
    theirs.reset();
    ctx0.reset();
    dev0.reset();
}

}  // namespace
