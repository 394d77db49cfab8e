#include "emu/chip/hbm_phy.hpp"
#include "jal/hw/mgmt.h"

#include <gtest/gtest.h>

using jal::emu::HbmPhy;

namespace {
constexpr std::uint32_t hbm(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_HBM;
}

std::uint64_t result(const HbmPhy& phy)
{
    return phy.read(hbm(JAL_HBM_RESULT0)) | (std::uint64_t{phy.read(hbm(JAL_HBM_RESULT1))} << 32);
}
bool lane_passed(const HbmPhy& phy, std::uint32_t lane)
{
    return (phy.read(hbm(lane < 32   ? JAL_HBM_RESULT0
                         : lane < 64 ? JAL_HBM_RESULT1
                                     : JAL_HBM_RESULT2)) >>
            (lane % 32)) &
           1;
}
}  // namespace

TEST(HbmPhy, SameSeedSameSiliconDifferentSeedDifferent)
{
    HbmPhy a(7, {}), b(7, {}), c(8, {});
    int differ = 0;
    for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) {
        EXPECT_EQ(a.read_eye(3, l, 10).lo, b.read_eye(3, l, 10).lo);
        differ += a.read_eye(3, l, 10).lo != c.read_eye(3, l, 10).lo;
    }
    EXPECT_GT(differ, 10);
}

TEST(HbmPhy, EccCountsArePerChannelAndReadThroughTheSelection)
{
    HbmPhy phy(1, {});
    phy.count_ecc(7, 3, 0);
    phy.count_ecc(7, 2, 1);
    phy.count_ecc(999, 1, 1);  // no such channel: ignored
    phy.write(hbm(JAL_HBM_CH_SEL), 7, 0);
    EXPECT_EQ(phy.read(hbm(JAL_HBM_ECC_CORRECTED)), 5u);
    EXPECT_EQ(phy.read(hbm(JAL_HBM_ECC_UNCORRECTED)), 1u);
    phy.write(hbm(JAL_HBM_CH_SEL), 8, 0);
    EXPECT_EQ(phy.read(hbm(JAL_HBM_ECC_CORRECTED)), 0u);
}

TEST(HbmPhy, ConnectReportsDeadLanes)
{
    HbmPhy phy(1, {{5, 3}, {5, 66}});
    phy.write(hbm(JAL_HBM_CH_SEL), 5, 0);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_CONNECT, 0);
    EXPECT_FALSE(lane_passed(phy, 3));
    EXPECT_FALSE(lane_passed(phy, 66));
    EXPECT_TRUE(lane_passed(phy, 4));
    EXPECT_TRUE(lane_passed(phy, 67));
    EXPECT_TRUE(phy.lane_dead(5, 3));
    EXPECT_FALSE(phy.lane_dead(4, 3));
}

TEST(HbmPhy, ReadTestPassesExactlyInsideTheEyeAndFlickersAtTheEdge)
{
    HbmPhy phy(42, {});
    const std::uint32_t ch = 9, lane = 17, vref = phy.vref_opt(ch);
    phy.write(hbm(JAL_HBM_CH_SEL), ch, 0);
    phy.write(hbm(JAL_HBM_VREF), vref, 0);
    const auto eye = phy.read_eye(ch, lane, vref);
    ASSERT_FALSE(eye.empty());
    phy.write(hbm(JAL_HBM_LANE_SEL), JAL_HBM_LANE_ALL, 0);
    for (int tap = 0; tap < static_cast<int>(JAL_HBM_DELAY_TAPS); ++tap) {
        phy.write(hbm(JAL_HBM_RD_DELAY), tap, 0);
        int passes = 0;
        for (int trial = 0; trial < 32; ++trial) {
            phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_READ_TEST, 0);
            passes += lane_passed(phy, lane);
        }
        if (eye.contains(tap))
            EXPECT_EQ(passes, 32) << tap;
        else if (tap == eye.lo - 1 || tap == eye.hi + 1)
            EXPECT_TRUE(passes > 0 && passes < 32) << tap;
        else
            EXPECT_EQ(passes, 0) << tap;
    }
}

TEST(HbmPhy, EyeNarrowsAwayFromOptimalVref)
{
    HbmPhy phy(3, {});
    const std::uint32_t opt = phy.vref_opt(0);
    const auto at_opt = phy.read_eye(0, 0, opt), off = phy.read_eye(0, 0, opt + 6);
    EXPECT_EQ(off.hi - off.lo, at_opt.hi - at_opt.lo - 6);
}

TEST(HbmPhy, WriteTestNeedsWriteLeveling)
{
    HbmPhy phy(5, {});
    const std::uint32_t ch = 2;
    phy.write(hbm(JAL_HBM_CH_SEL), ch, 0);
    phy.write(hbm(JAL_HBM_VREF), phy.vref_opt(ch), 0);
    const auto eye = phy.write_eye(ch, 0, phy.vref_opt(ch));
    phy.write(hbm(JAL_HBM_LANE_SEL), 0, 0);
    phy.write(hbm(JAL_HBM_WR_DELAY), (eye.lo + eye.hi) / 2, 0);
    phy.write(hbm(JAL_HBM_WRLVL_DELAY), phy.wrlvl_point(ch) - 1, 0);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_WRLVL, 0);
    EXPECT_EQ(phy.read(hbm(JAL_HBM_RESULT0)), 0u);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_WRITE_TEST, 0);
    EXPECT_FALSE(lane_passed(phy, 0));
    phy.write(hbm(JAL_HBM_WRLVL_DELAY), phy.wrlvl_point(ch), 0);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_WRLVL, 0);
    EXPECT_EQ(phy.read(hbm(JAL_HBM_RESULT0)), 1u);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_WRITE_TEST, 0);
    EXPECT_TRUE(lane_passed(phy, 0));
}

TEST(HbmPhy, MemtestPassesOnlyWhenEveryCarrierIsCentredAndDeadLanesAreRemapped)
{
    HbmPhy phy(11, {{0, 7}});
    phy.write(hbm(JAL_HBM_CH_SEL), 0, 0);
    const std::uint32_t vref = phy.vref_opt(0);
    phy.write(hbm(JAL_HBM_VREF), vref, 0);
    phy.write(hbm(JAL_HBM_WRLVL_DELAY), phy.wrlvl_point(0), 0);
    auto centre_all = [&] {
        for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) {
            if (phy.lane_dead(0, l)) continue;
            const auto r = phy.read_eye(0, l, vref), w = phy.write_eye(0, l, vref);
            phy.write(hbm(JAL_HBM_LANE_SEL), l, 0);
            phy.write(hbm(JAL_HBM_RD_DELAY), (r.lo + r.hi) / 2, 0);
            phy.write(hbm(JAL_HBM_WR_DELAY), (w.lo + w.hi) / 2, 0);
        }
    };
    centre_all();
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_MEMTEST, 0);
    EXPECT_EQ(phy.engine_busy_until_ns(0), std::uint64_t{JAL_HBM_MEMTEST_US} * 1000);
    EXPECT_GT(phy.read(hbm(JAL_HBM_ERRORS)), 0u) << "dead lane 7 still carries data";
    phy.write(hbm(JAL_HBM_REMAP), (0u << 8) | 7u, 0);
    EXPECT_EQ(phy.carrier(0, 7), JAL_HBM_DQ_LANES + 0u);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_MEMTEST, 0);
    EXPECT_EQ(phy.read(hbm(JAL_HBM_ERRORS)), 0u);
    // Move one lane to the very edge of its eye's flicker zone: memtest must see it.
    const auto r = phy.read_eye(0, 20, vref);
    phy.write(hbm(JAL_HBM_LANE_SEL), 20, 0);
    phy.write(hbm(JAL_HBM_RD_DELAY), r.hi + 1, 0);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_MEMTEST, 0);
    EXPECT_GT(phy.read(hbm(JAL_HBM_ERRORS)), 0u);
}

TEST(HbmPhy, ResetClearsTrainingState)
{
    HbmPhy phy(1, {});
    phy.write(hbm(JAL_HBM_CH_SEL), 4, 0);
    phy.write(hbm(JAL_HBM_CH_ENABLE), 1, 0);
    phy.write(hbm(JAL_HBM_VREF), 9, 0);
    EXPECT_TRUE(phy.channel_enabled(4));
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_RESET, 0);
    EXPECT_FALSE(phy.channel_enabled(4));
    EXPECT_EQ(phy.vref(4), 0u);
    EXPECT_EQ(result(phy) >> 63, 0u);
}

TEST(HbmPhy, EachStackHasOneEngineAndResultsWaitForIt)
{
    HbmPhy phy(1, {});
    const std::uint64_t cmd = std::uint64_t{JAL_HBM_CMD_US} * 1000,
                        mem = std::uint64_t{JAL_HBM_MEMTEST_US} * 1000;
    EXPECT_EQ(HbmPhy::command_ns(JAL_HBM_CMD_READ_TEST), cmd);
    EXPECT_EQ(HbmPhy::command_ns(JAL_HBM_CMD_MEMTEST), mem);
    EXPECT_EQ(HbmPhy::command_ns(99), 0u);
    // Channels 0 and 1 share stack 0; channel 32 is on stack 1.
    phy.write(hbm(JAL_HBM_CH_SEL), 0, 1000);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_CONNECT, 1000);
    EXPECT_EQ(phy.engine_busy_until_ns(0), 1000 + cmd);
    EXPECT_EQ(phy.ready_ns(hbm(JAL_HBM_RESULT0)), 1000 + cmd);
    EXPECT_EQ(phy.ready_ns(hbm(JAL_HBM_ERRORS)), 1000 + cmd);
    EXPECT_EQ(phy.ready_ns(hbm(JAL_HBM_VREF)), 0u) << "plain registers never wait";
    phy.write(hbm(JAL_HBM_CH_SEL), 1, 1100);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_MEMTEST, 1100);
    EXPECT_EQ(phy.engine_busy_until_ns(0), 1000 + cmd + mem) << "queued behind channel 0's command";
    phy.write(hbm(JAL_HBM_CH_SEL), 32, 1200);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_READ_TEST, 1200);
    EXPECT_EQ(phy.engine_busy_until_ns(1), 1200 + cmd) << "another stack runs in parallel";
    EXPECT_EQ(phy.ready_ns(hbm(JAL_HBM_RESULT1)), 1200 + cmd);
    // An idle engine starts at the time of the command, not where it last stopped.
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_WRLVL, 50000);
    EXPECT_EQ(phy.engine_busy_until_ns(1), 50000 + cmd);
    // An unknown command costs nothing and changes nothing.
    phy.write(hbm(JAL_HBM_CMD), 99, 60000);
    EXPECT_EQ(phy.engine_busy_until_ns(1), 50000 + cmd);
}

TEST(HbmPhy, ResultsAreKeptPerChannel)
{
    HbmPhy phy(1, {{0, 5}, {32, 6}});
    phy.write(hbm(JAL_HBM_CH_SEL), 0, 0);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_CONNECT, 0);
    phy.write(hbm(JAL_HBM_CH_SEL), 32, 0);
    phy.write(hbm(JAL_HBM_CMD), JAL_HBM_CMD_CONNECT, 0);
    EXPECT_EQ(phy.read(hbm(JAL_HBM_RESULT0)), ~(1u << 6));
    phy.write(hbm(JAL_HBM_CH_SEL), 0, 0);
    EXPECT_EQ(phy.read(hbm(JAL_HBM_RESULT0)), ~(1u << 5));
}
