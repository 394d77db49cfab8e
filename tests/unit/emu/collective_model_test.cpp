// Collective schedules run through the link model: results against hand-computed cases,
// and the bus bandwidth of large messages near the link rate on switched planes.
#include "emu/fabric/collective_model.hpp"

#include <gtest/gtest.h>

namespace {

using namespace jal::emu::fabric;
using jal::emu::kLinkLatencyNs;

TEST(CollectiveModel, TwoChipsOnePlaneTakeBytesOverFiftyGbPerSecondPlusFlight)
{
    SwitchedDomainModel m(2, 1);
    EXPECT_EQ(m.chip_gbytes_per_s(), 50.0);
    EXPECT_EQ(m.send(0, 1, 50'000, 100), 100u + 1'000u + kLinkLatencyNs);
    // The plane's transmit direction is busy: the next send queues behind it.
    EXPECT_EQ(m.send(0, 1, 50'000, 100), 100u + 2'000u + kLinkLatencyNs);
}

TEST(CollectiveModel, RingAllReduceTakesTwoNMinusOneSteps)
{
    // 8 chips, 8 KiB: a chunk of 1 KiB a step (one slice), 12 planes: 86 B a plane (2 ns).
    const CollectiveResult r = run_collective(Collective::all_reduce, Algorithm::ring, 8, 8192);
    EXPECT_EQ(r.transfers, 2u * 7 * 8);
    // Each step waits for the previous step's arrival: 14 × (2 ns + 1 µs).
    EXPECT_EQ(r.time_ns, 14u * (2 + kLinkLatencyNs));
    EXPECT_DOUBLE_EQ(busbw_factor(Collective::all_reduce, 8), 2.0 * 7 / 8);
    EXPECT_DOUBLE_EQ(busbw_factor(Collective::all_to_all, 8), 7.0 / 8);
}

TEST(CollectiveModel, HalvingDoublingTakesTwoLogNSteps)
{
    const CollectiveResult r =
        run_collective(Collective::all_reduce, Algorithm::halving_doubling, 8, 12'000);
    EXPECT_EQ(r.transfers, 2u * 3 * 8);
    // Halves of 6000, 3000, 1500 B, then back: 500, 250, 125 B a plane, 10, 5 and 3 ns.
    EXPECT_EQ(r.time_ns, 2u * (10 + 5 + 3) + 6 * kLinkLatencyNs);
    EXPECT_THROW(run_collective(Collective::all_reduce, Algorithm::halving_doubling, 6, 10),
                 std::invalid_argument);
}

TEST(CollectiveModel, DirectAllToAllIsStaggeredWithoutContention)
{
    // 8 chips, 96 000 B each: 12 000 B to each of 7 peers, 20 ns each over 12 planes.
    const CollectiveResult r = run_collective(Collective::all_to_all, Algorithm::direct, 8, 96'000);
    EXPECT_EQ(r.transfers, 7u * 8);
    EXPECT_EQ(r.time_ns, 7u * 20 + kLinkLatencyNs);
}

TEST(CollectiveModel, LargeMessagesReachTheLinkRate)
{
    for (unsigned n : {8u, 128u}) {
        const auto ar = best_collective(Collective::all_reduce, n, 256ull << 20);
        EXPECT_EQ(ar.algorithm, Algorithm::ring) << n;
        EXPECT_GE(ar.busbw_fraction, 0.9) << n;
        EXPECT_LE(ar.busbw_fraction, 1.0) << n;
        const auto a2a = best_collective(Collective::all_to_all, n, 256ull << 20);
        EXPECT_GE(a2a.busbw_fraction, 0.9) << n;
        EXPECT_LE(a2a.busbw_fraction, 1.0) << n;
    }
}

TEST(CollectiveModel, SmallMessagesTakeALatencyBoundSchedule)
{
    const auto r = best_collective(Collective::all_reduce, 128, 4096);
    EXPECT_NE(r.algorithm, Algorithm::ring);  // 254 flights would be the slowest
    EXPECT_LT(r.time_ns, 2u * 127 * kLinkLatencyNs);
    EXPECT_GT(r.time_ns, kLinkLatencyNs);
}

}  // namespace
