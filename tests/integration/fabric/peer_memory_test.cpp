// Peer memory on a fabric domain of one jal-emu process holding chips 0 and 1, joined by two
// scale-up links: a context on chip 1 maps a buffer of chip 0 (export, import), then COPY
// packets and a tile program on chip 1 read and write it, byte for byte, at the links'
// modelled cost. Isolation (no mapping, a forged export, a freed export) and a link taken
// down end in clear statuses, and local work carries on.
#include <arpa/inet.h>
#include <netinet/in.h>
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
#include <jal/error.hpp>
#include <jal/jal.hpp>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>

#include "../firmware/console_client.hpp"
#include "links_up.hpp"
#include "peer_side.hpp"
#include <tools/common/emu_process.hpp>

namespace {

using fwtest::ConsoleClient;
using jal::kernels::Args;
using jal::kernels::Builder;
using jal::kernels::DispatchOptions;
using jal::kernels::Launcher;
using jal::kernels::Program;
using jal::kernels::Q;
using jal::kernels::T;
using jal::kernels::X;
using jal::runtime::Context;
using jal::runtime::Device;
using jal::runtime::HostBuffer;
using jal::runtime::Memory;
using jal::runtime::Queue;
using jal::runtime::Signal;
using jal::test::Side;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr uint64_t kPage = JAL_PAGE_SIZE;
constexpr auto kWait = jal::test::kSideWait;  // a packet that never completes fails the test

// One process, chips 0 and 1, two links between them.
std::string write_domain_file()
{
    const int port = jal::tools::free_loopback_port();
    const std::string path = ::testing::TempDir() + "peer-domain-" + std::to_string(getpid()) +
                             "-" + std::to_string(port) + ".json";
    std::ofstream(path) << R"({"provider": "tcp", "processes": [
        {"name": "a", "address": "127.0.0.1:)"
                        << port << R"(", "chips": [0, 1]}],
      "links": [{"kind": "scale-up", "a": [0, 0], "b": [1, 0]},
                {"kind": "scale-up", "a": [0, 1], "b": [1, 1]}]})";
    return path;
}

std::vector<std::byte> pattern(size_t n, uint32_t seed)
{
    std::vector<std::byte> v(n);
    uint32_t x = seed * 2654435761u + 1;
    for (auto& b : v) {
        x = x * 1664525u + 1013904223u;
        b = static_cast<std::byte>(x >> 24);
    }
    return v;
}

class PeerMemoryTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        jal::test::EmuOptions o;
        o.chips = 2;
        o.extra_args = {"--fw",      "native", "--domain",         write_domain_file(),
                        "--process", "a",      "--fabric-timeout", "2"};
        emu = std::make_unique<jal::test::EmuProcess>(o);
        console1 = std::make_unique<ConsoleClient>(emu->socket_dir() + "/jal1.console");
        wait_links_up();
        dev0 = std::make_unique<Device>(0, emu->socket_dir());
        dev1 = std::make_unique<Device>(1, emu->socket_dir());
    }
    void TearDown() override
    {
        dev1.reset();
        dev0.reset();
        console1.reset();
        emu.reset();
    }

    // Both of chip 1's links up (the firmware trains them at boot, retrains a down one).
    void wait_links_up() { jal::test::links_up(*console1, 2); }

    std::unique_ptr<jal::test::EmuProcess> emu;
    std::unique_ptr<ConsoleClient> console1;
    std::unique_ptr<Device> dev0, dev1;
};

TEST_F(PeerMemoryTest, CopiesThroughAMappedPeerBufferRoundTripByteForByte)
{
    Side a(*dev0, 8 * kPage), b(*dev1, 8 * kPage);
    Memory theirs(a.ctx, 4 * kPage, JAL_PLACE_SLICE, 1);
    Memory mine(b.ctx, 4 * kPage, JAL_PLACE_SLICE, 2);
    Memory peer = Memory::map_peer(b.ctx, theirs, 0, theirs.size());
    EXPECT_EQ(peer.info().placement, uint32_t{JAL_PLACE_PEER});
    EXPECT_EQ(peer.size(), theirs.size());
    EXPECT_NE(peer.va(), mine.va());

    // Odd sizes at odd offsets, across one and two 2 MiB page boundaries.
    const struct {
        uint64_t offset, bytes;
    } cases[] = {{0, 1}, {kPage - 3, 7}, {kPage / 2 + 5, kPage + 11}, {13, 3 * kPage + 17}};
    uint32_t seed = 1;
    for (const auto& c : cases) {
        SCOPED_TRACE("offset " + std::to_string(c.offset) + ", " + std::to_string(c.bytes) +
                     " bytes");
        const auto data = pattern(c.bytes, seed++);
        // Host -> chip 0's memory through chip 1's links, and back the same way.
        ASSERT_EQ(b.to_device(peer.va() + c.offset, data), uint32_t{JAL_STATUS_OK});
        ASSERT_EQ(b.to_host(peer.va() + c.offset, c.bytes), uint32_t{JAL_STATUS_OK});
        EXPECT_TRUE(b.host_equals(data));
        // The bytes are in chip 0's buffer, where its own context finds them.
        ASSERT_EQ(a.to_host(theirs.va() + c.offset, c.bytes), uint32_t{JAL_STATUS_OK});
        EXPECT_TRUE(a.host_equals(data));
    }

    // Device to device: chip 1's own memory to the peer's and back into its own.
    const auto data = pattern(2 * kPage + 99, 42);
    ASSERT_EQ(b.to_device(mine.va(), data), uint32_t{JAL_STATUS_OK});
    ASSERT_EQ(b.copy(JAL_COPY_D2D, peer.va() + 1000, mine.va(), data.size()),
              uint32_t{JAL_STATUS_OK});
    ASSERT_EQ(b.copy(JAL_COPY_D2D, mine.va() + kPage, peer.va() + 1000, data.size()),
              uint32_t{JAL_STATUS_OK});
    ASSERT_EQ(b.to_host(mine.va() + kPage, data.size()), uint32_t{JAL_STATUS_OK});
    EXPECT_TRUE(b.host_equals(data));
    ASSERT_EQ(a.to_host(theirs.va() + 1000, data.size()), uint32_t{JAL_STATUS_OK});
    EXPECT_TRUE(a.host_equals(data));
}

TEST_F(PeerMemoryTest, ARemoteCopyCostsAtLeastItsBytesAtTheLinkRate)
{
    Side a(*dev0, 8 * kPage), b(*dev1, 8 * kPage);
    Memory theirs(a.ctx, 4 * kPage, JAL_PLACE_SLICE, 1);
    Memory peer = Memory::map_peer(b.ctx, theirs, 0, theirs.size());
    const json before = console1->ask("peer-memory");
    const auto data = pattern(3 * kPage + 1, 7);
    ASSERT_EQ(b.to_device(peer.va(), data), uint32_t{JAL_STATUS_OK});
    const json after = console1->ask("peer-memory");

    const uint64_t bytes = after["bytes"].get<uint64_t>() - before["bytes"].get<uint64_t>();
    const uint64_t ns = after["link_ns"].get<uint64_t>() - before["link_ns"].get<uint64_t>();
    EXPECT_EQ(bytes, data.size());
    double fastest = 0;  // GB/s = bytes per ns
    const json links = console1->ask("links");
    for (const json& l : links["links"])
        fastest = std::max(fastest, l["gbytes_per_s"].get<double>());
    ASSERT_GT(fastest, 0) << links.dump();
    // The modelled time is the link model's charge: never below bytes / rate.
    EXPECT_GE(static_cast<double>(ns) * fastest / static_cast<double>(bytes), 1.0)
        << ns << " ns for " << bytes << " bytes at " << fastest << " GB/s";
}

// TLOAD rows of a peer buffer (across a page boundary), add 1.5, TSTORE them into it.
jal::kernels::CodeObject peer_tile_kernel(uint32_t rows, uint32_t cols)
{
    Builder b("peer_tile");
    X src = b.arg("src", JAL_ARG_ADDRESS), dst = b.arg("dst", JAL_ARG_ADDRESS);
    X stride = b.arg("stride");
    T t = b.t();
    Q q = b.q();
    X l1 = b.x(), r = b.x(), c = b.x();
    b.li(l1, b.l1_alloc(rows * cols * 4));
    b.li(r, rows), b.li(c, cols);
    b.tdesc(t, l1, r, c, JAL_DT_F32);
    b.tload(t, src, stride, q);
    b.wait(q);
    b.vadds(t, t, 1.5f);
    b.tstore(t, dst, stride, q);
    b.wait(q);
    b.end();
    return b.finish();
}

TEST_F(PeerMemoryTest, ATileProgramLoadsAndStoresAPeerBuffer)
{
    constexpr uint32_t kRows = 16, kCols = 64;
    constexpr uint64_t kStride = 8192;  // rows apart, so the tile spans a page boundary
    Side a(*dev0, 4 * kPage), b(*dev1, 4 * kPage);
    Memory theirs(a.ctx, 4 * kPage, JAL_PLACE_SLICE, 1);
    Memory peer = Memory::map_peer(b.ctx, theirs, 0, theirs.size());

    // The source rows, written on chip 0 by its own context.
    const uint64_t src_off = kPage - 5 * kStride, dst_off = 2 * kPage - 7 * kStride;
    std::vector<float> src(kRows * kCols);
    for (size_t i = 0; i < src.size(); i++) src[i] = static_cast<float>(i % 997) * 0.25f;
    std::vector<std::byte> image(kRows * kStride);
    for (uint32_t r = 0; r < kRows; r++)
        std::memcpy(image.data() + r * kStride, src.data() + r * kCols, kCols * 4);
    ASSERT_EQ(a.to_device(theirs.va() + src_off, image), uint32_t{JAL_STATUS_OK});

    Launcher launcher(*dev1, b.ctx, b.queue);
    Program prog(*dev1, b.ctx, b.queue, peer_tile_kernel(kRows, kCols));
    DispatchOptions one;
    one.slice_mask = 1;
    const jal_dispatch_report rep = launcher.run(
        prog, Args().addr(peer.va() + src_off).addr(peer.va() + dst_off).u64(kStride), one);
    ASSERT_EQ(rep.status, uint32_t{JAL_STATUS_OK});
    // Two tiles over the links (one each way): never faster than their bytes at 50 GB/s.
    EXPECT_GE(rep.modelled_ns * 50, 2ull * kRows * kCols * 4);

    // Chip 0 reads the result rows: source + 1.5 each.
    ASSERT_EQ(a.to_host(theirs.va() + dst_off, kRows * kStride), uint32_t{JAL_STATUS_OK});
    for (uint32_t r = 0; r < kRows; r++)
        for (uint32_t c = 0; c < kCols; c++) {
            float v;
            std::memcpy(&v, a.host.data() + r * kStride + c * 4, 4);
            ASSERT_EQ(v, src[r * kCols + c] + 1.5f) << "row " << r << " col " << c;
        }
}

TEST_F(PeerMemoryTest, ScalarLoadsAndStoresReachThePeerBuffer)
{
    Side a(*dev0, kPage), b(*dev1, kPage);
    Memory theirs(a.ctx, kPage, JAL_PLACE_SLICE, 1);
    Memory peer = Memory::map_peer(b.ctx, theirs, 0, kPage);
    std::vector<std::byte> v(8);
    const uint64_t x = 0x0123456789abcdefull;
    std::memcpy(v.data(), &x, 8);
    ASSERT_EQ(a.to_device(theirs.va() + 4096, v), uint32_t{JAL_STATUS_OK});

    // *(dst) = *(src) + 1, with LD and ST on the peer's addresses.
    Builder k("peer_scalar");
    X src = k.arg("src", JAL_ARG_ADDRESS), dst = k.arg("dst", JAL_ARG_ADDRESS);
    X t = k.x();
    k.ld(t, src, 0);
    k.addi(t, t, 1);
    k.st(t, dst, 0);
    k.end();
    Launcher launcher(*dev1, b.ctx, b.queue);
    Program prog(*dev1, b.ctx, b.queue, k.finish());
    DispatchOptions one;
    one.slice_mask = 1;
    const jal_dispatch_report rep =
        launcher.run(prog, Args().addr(peer.va() + 4096).addr(peer.va() + 8192), one);
    ASSERT_EQ(rep.status, uint32_t{JAL_STATUS_OK});
    // The load waited for the link's round trip (a read's 2 µs flight at least).
    EXPECT_GE(rep.modelled_ns, 2000u);
    ASSERT_EQ(a.to_host(theirs.va() + 8192, 8), uint32_t{JAL_STATUS_OK});
    uint64_t y;
    std::memcpy(&y, a.host.data(), 8);
    EXPECT_EQ(y, x + 1);
}

TEST_F(PeerMemoryTest, OnlyTheImportingContextReachesThePeerBuffer)
{
    Side a(*dev0, kPage), b(*dev1, kPage), other(*dev1, kPage);
    Memory theirs(a.ctx, 2 * kPage, JAL_PLACE_SLICE, 1);
    const auto secret = pattern(4096, 9);
    ASSERT_EQ(a.to_device(theirs.va(), secret), uint32_t{JAL_STATUS_OK});
    Memory peer = Memory::map_peer(b.ctx, theirs, 0, theirs.size());
    ASSERT_EQ(b.to_host(peer.va(), secret.size()), uint32_t{JAL_STATUS_OK});
    EXPECT_TRUE(b.host_equals(secret));

    // Another context of chip 1, at the same address: nothing is mapped there for it.
    EXPECT_EQ(other.to_host(peer.va(), secret.size()), uint32_t{JAL_STATUS_PAGE_FAULT});
    EXPECT_EQ(other.to_device(peer.va(), pattern(64, 1)), uint32_t{JAL_STATUS_PAGE_FAULT});

    // A forged export: the right handle with a guessed key, or another slot with the key.
    jal_peer_export_t e = theirs.export_range(0, kPage);
    jal_peer_export_t forged = e;
    forged.key ^= 1;
    try {
        Memory m = Memory::import_peer(other.ctx, forged);
        ADD_FAILURE() << "a wrong key was accepted";
    } catch (const jal::Error& err) {
        EXPECT_EQ(err.status(), JAL_STATUS_PERMISSION) << err.what();
    }
    forged = e;
    forged.handle = (e.handle + 1) % JAL_MAX_EXPORTS;
    try {
        Memory m = Memory::import_peer(other.ctx, forged);
        ADD_FAILURE() << "another slot was accepted";
    } catch (const jal::Error& err) {
        EXPECT_EQ(err.status(), JAL_STATUS_PERMISSION) << err.what();
    }
    // More pages than were exported.
    forged = e;
    forged.pages = e.pages + 1;
    try {
        Memory m = Memory::import_peer(other.ctx, forged);
        ADD_FAILURE() << "a page beyond the export was mapped";
    } catch (const jal::Error& err) {
        EXPECT_EQ(err.status(), JAL_STATUS_PERMISSION) << err.what();
    }
    // Chip 0's memory is unchanged by all of it.
    ASSERT_EQ(a.to_host(theirs.va(), secret.size()), uint32_t{JAL_STATUS_OK});
    EXPECT_TRUE(a.host_equals(secret));
}

TEST_F(PeerMemoryTest, FreedOrDestroyedExportsNoLongerReachTheirPages)
{
    Side a(*dev0, kPage), b(*dev1, kPage);
    auto owner = std::make_unique<Memory>(a.ctx, kPage, JAL_PLACE_SLICE, 1);
    Memory peer = Memory::map_peer(b.ctx, *owner, 0, kPage);
    ASSERT_EQ(b.to_device(peer.va(), pattern(4096, 3)), uint32_t{JAL_STATUS_OK});
    owner->free();
    owner.reset();
    // The next tenant of chip 0 gets the page (slice 1 had it free), with a secret in it.
    Context next(*dev0);
    Queue next_queue(next, 64);
    Memory reused(next, kPage, JAL_PLACE_SLICE, 1);
    const auto secret = pattern(4096, 4);
    {
        std::memcpy(a.host.data(), secret.data(), secret.size());
        Signal s(*dev0, 1);
        next_queue.copy_to_device(reused.va(), a.host, 0, secret.size(), &s);
        ASSERT_EQ(s.wait_zero(kWait).status, JAL_STATUS_OK);
    }
    EXPECT_EQ(b.to_host(peer.va(), secret.size()), uint32_t{JAL_STATUS_PERMISSION});
    EXPECT_FALSE(b.host_equals(secret));
    EXPECT_EQ(b.to_device(peer.va(), pattern(4096, 5)), uint32_t{JAL_STATUS_PERMISSION});
    {
        Signal s(*dev0, 1);
        next_queue.copy_to_host(a.host, 0, reused.va(), secret.size(), &s);
        ASSERT_EQ(s.wait_zero(kWait).status, JAL_STATUS_OK);
        EXPECT_TRUE(a.host_equals(secret)) << "the stale mapping wrote the next tenant's page";
    }

    // A context destroyed with an export still out: the same.
    Context gone(*dev0);
    Memory held(gone, kPage, JAL_PLACE_SLICE, 1);
    Memory peer2 = Memory::map_peer(b.ctx, held, 0, kPage);
    ASSERT_EQ(b.to_host(peer2.va(), 64), uint32_t{JAL_STATUS_OK});
    gone.destroy();
    EXPECT_EQ(b.to_host(peer2.va(), 64), uint32_t{JAL_STATUS_PERMISSION});
}

TEST_F(PeerMemoryTest, BadRequestsGetClearErrors)
{
    Side a(*dev0, kPage), b(*dev1, kPage);
    Memory theirs(a.ctx, 2 * kPage, JAL_PLACE_SLICE, 1);
    Memory mine(b.ctx, kPage, JAL_PLACE_SLICE, 1);
    auto status_of = [](auto&& f) {
        try {
            f();
        } catch (const jal::Error& e) {
            return static_cast<uint32_t>(e.status());
        }
        return uint32_t{JAL_STATUS_OK};
    };
    EXPECT_EQ(status_of([&] { Memory::map_peer(b.ctx, theirs, 0, 0); }),
              uint32_t{JAL_STATUS_INVALID_LENGTH});
    EXPECT_EQ(status_of([&] { Memory::map_peer(b.ctx, theirs, 4096, kPage); }),
              uint32_t{JAL_STATUS_INVALID_FIELD});
    EXPECT_EQ(status_of([&] { Memory::map_peer(b.ctx, theirs, kPage, 2 * kPage); }),
              uint32_t{JAL_STATUS_OUT_OF_RANGE});
    // Replicated memory is not exported (a peer would write one copy of several).
    Memory replicated(a.ctx, kPage, JAL_PLACE_REPLICATED, 0b11);
    EXPECT_EQ(status_of([&] { Memory::map_peer(b.ctx, replicated, 0, kPage); }),
              uint32_t{JAL_STATUS_INVALID_FIELD});
    // An export of an unknown chip.
    jal_peer_export_t e = theirs.export_range(0, kPage);
    e.chip = 7;
    EXPECT_EQ(status_of([&] { Memory::import_peer(b.ctx, e); }), uint32_t{JAL_STATUS_LINK_DOWN});
    // Its own chip's memory is used directly, not mapped as a peer's.
    EXPECT_EQ(status_of([&] { Memory::map_peer(b.ctx, mine, 0, kPage); }),
              uint32_t{JAL_STATUS_INVALID_FIELD});
    // A peer mapping cannot be exported on.
    Memory peer = Memory::map_peer(b.ctx, theirs, 0, kPage);
    EXPECT_EQ(status_of([&] { peer.export_range(0, kPage); }), uint32_t{JAL_STATUS_INVALID_FIELD});
}

TEST_F(PeerMemoryTest, ALinkTakenDownFailsTheRemoteCopyAndLocalWorkGoesOn)
{
    Side a(*dev0, kPage), b(*dev1, kPage);
    Memory theirs(a.ctx, kPage, JAL_PLACE_SLICE, 1);
    Memory mine(b.ctx, kPage, JAL_PLACE_SLICE, 1);
    Memory peer = Memory::map_peer(b.ctx, theirs, 0, kPage);
    const auto data = pattern(65536, 11);
    ASSERT_EQ(b.to_device(peer.va(), data), uint32_t{JAL_STATUS_OK});

    // The firmware retrains a down link once a (modelled) second, so a retrain may land
    // between `link down` and the copy; then the links are seen up again and it is retried.
    uint32_t status = JAL_STATUS_OK;
    for (int attempt = 0; attempt < 5 && status == JAL_STATUS_OK; attempt++) {
        ASSERT_TRUE(console1->ask("link 0 down")["ok"]);
        ASSERT_TRUE(console1->ask("link 1 down")["ok"]);
        status = b.to_host(peer.va(), data.size());
    }
    EXPECT_EQ(status, uint32_t{JAL_STATUS_LINK_DOWN});
    EXPECT_GT(console1->ask("peer-memory")["failures"].get<uint64_t>(), 0u);
    // Local work of the same queue goes on.
    ASSERT_EQ(b.to_device(mine.va(), data), uint32_t{JAL_STATUS_OK});
    ASSERT_EQ(b.to_host(mine.va(), data.size()), uint32_t{JAL_STATUS_OK});
    EXPECT_TRUE(b.host_equals(data));
    // The links come back (retrained), and so does the peer buffer, intact.
    wait_links_up();
    ASSERT_EQ(b.to_host(peer.va(), data.size()), uint32_t{JAL_STATUS_OK});
    EXPECT_TRUE(b.host_equals(data));
}

}  // namespace
