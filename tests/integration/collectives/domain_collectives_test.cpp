// Collectives over a domain of two jal-emu processes joined by libfabric's tcp provider on
// loopback (chip 0 in process a, chip 1 in process b, two scale-up links): an all-reduce
// and an all-to-all agree with the host reference; then process a is killed and chip 1's
// next all-reduce fails within the communicator's timeout while its local work goes on.
#include <signal.h>

#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <fixture/emu_process.hpp>
#include <jal/collectives.hpp>
#include <jal/jal.hpp>

#include "../fabric/links_up.hpp"
#include "../fabric/two_process_domain.hpp"
#include "collective_reference.hpp"
#include "rank_chip.hpp"

namespace {

using jal::runtime::Context;
using jal::runtime::Device;
using jal::runtime::HostBuffer;
using jal::runtime::Memory;
using jal::runtime::Queue;
using jal::runtime::Signal;
using jal::test::random_elements;
using jal::test::reference_sum;
using namespace std::chrono_literals;

std::unique_ptr<jal::test::EmuProcess> start(const std::string& file, const std::string& process)
{
    jal::test::EmuOptions o;
    o.extra_args = {"--fw",      "native", "--domain",         file,
                    "--process", process,  "--fabric-timeout", "2"};
    return std::make_unique<jal::test::EmuProcess>(o);
}

using Side = jal::test::RankChip;
using jal::test::completion;

TEST(DomainCollectives, TwoProcessesReduceAndExchangeAndAPeerThatDies)
{
    const std::string file =
        jal::test::write_two_process_domain("collectives", jal::test::kTwoScaleUpLinks);
    auto a = start(file, "a");
    auto b = start(file, "b");
    for (const auto* emu : {a.get(), b.get()})  // both ends trained: each imports the other
        jal::test::chip_links_up(*emu, 0, 2);
    auto side0 = std::make_unique<Side>(0, a->socket_dir());
    Side side1(0, b->socket_dir());
    Side* sides[2] = {side0.get(), &side1};

    jal::collectives::Options opt;
    opt.staging_bytes = 64 << 10;
    opt.timeout = 5s;
    auto comm = std::make_unique<jal::collectives::Communicator>(
        std::vector<jal::collectives::Rank>{{side0->dev, side0->ctx, side0->queue},
                                            {side1.dev, side1.ctx, side1.queue}},
        opt);
    const size_t count = 40000;  // F32: three pieces of the 64 KiB slots
    std::vector<std::vector<std::byte>> in;
    std::vector<Memory> send, recv;
    for (int r = 0; r < 2; ++r) {
        in.push_back(random_elements(JAL_DT_F32, count, 5 + r));
        send.emplace_back(sides[r]->ctx, count * 4, JAL_PLACE_SLICE, 1);
        recv.emplace_back(sides[r]->ctx, count * 4, JAL_PLACE_SLICE, 1);
        std::memcpy(sides[r]->host.data(), in[r].data(), count * 4);
        ASSERT_EQ(sides[r]->copy(JAL_COPY_H2D, send[r].va(), sides[r]->host.bus_addr(), count * 4),
                  uint32_t{JAL_STATUS_OK});
    }
    auto read = [&](int r, const Memory& m, size_t bytes) {
        EXPECT_EQ(sides[r]->copy(JAL_COPY_D2H, sides[r]->host.bus_addr(), m.va(), bytes),
                  uint32_t{JAL_STATUS_OK});
        const auto* p = static_cast<const std::byte*>(sides[r]->host.data());
        return std::vector<std::byte>(p, p + bytes);
    };

    // An all-reduce over the links, each rank's part on its own chip.
    Signal d0(side0->dev, 1), d1(side1.dev, 1);
    comm->all_reduce(0, send[0].va(), recv[0].va(), count, JAL_DT_F32, d0.get());
    comm->all_reduce(1, send[1].va(), recv[1].va(), count, JAL_DT_F32, d1.get());
    ASSERT_EQ(completion(d0), uint32_t{JAL_STATUS_OK});
    ASSERT_EQ(completion(d1), uint32_t{JAL_STATUS_OK});
    const auto sum = reference_sum(in, JAL_DT_F32, 0, count);
    EXPECT_TRUE(read(0, recv[0], count * 4) == sum);
    EXPECT_TRUE(read(1, recv[1], count * 4) == sum);

    // An all-to-all of half the vector each way.
    const size_t half = count / 2;
    Signal e0(side0->dev, 1), e1(side1.dev, 1);
    comm->all_to_all(0, send[0].va(), recv[0].va(), half, JAL_DT_F32, e0.get());
    comm->all_to_all(1, send[1].va(), recv[1].va(), half, JAL_DT_F32, e1.get());
    ASSERT_EQ(completion(e0), uint32_t{JAL_STATUS_OK});
    ASSERT_EQ(completion(e1), uint32_t{JAL_STATUS_OK});
    std::vector<std::byte> want1(in[0].begin() + half * 4, in[0].end());
    want1.insert(want1.end(), in[1].begin() + half * 4, in[1].end());
    EXPECT_TRUE(read(1, recv[1], count * 4) == want1);

    // Process a dies: chip 1's part of the next all-reduce fails, never hangs.
    kill(a->pid(), SIGKILL);
    Signal f1(side1.dev, 1);
    const auto t0 = std::chrono::steady_clock::now();
    comm->all_reduce(1, send[1].va(), recv[1].va(), count, JAL_DT_F32, f1.get());
    const uint32_t st = completion(f1);
    EXPECT_TRUE(st == JAL_STATUS_LINK_DOWN || st == JAL_STATUS_TIMEOUT) << jal_status_string(st);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, jal::test::kCollectiveWait);
    // Chip 1's local work goes on.
    std::memcpy(side1.host.data(), in[1].data(), 4096);
    ASSERT_EQ(side1.copy(JAL_COPY_H2D, recv[1].va(), side1.host.bus_addr(), 4096),
              uint32_t{JAL_STATUS_OK});
    EXPECT_TRUE(std::vector<std::byte>(in[1].begin(), in[1].begin() + 4096) ==
                read(1, recv[1], 4096));
    // Chip 0's handles are released against a dead emulator: errors, not hangs.
    comm.reset();
    send.erase(send.begin());
    recv.erase(recv.begin());
    side0.reset();
}

}  // namespace
