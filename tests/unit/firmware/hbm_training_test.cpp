// HBM training against the fake PHY (hidden eyes, edge flicker, dead lanes).
#include <gtest/gtest.h>

#include "fake_bus.hpp"
#include "firmware/hbm/trainer.hpp"

using namespace jal::fw;

namespace {

struct HbmTrainingTest : ::testing::Test {
    fake::FakeBus bus;
    host::EventLog log;
    host::Journal journal{log};
    hbm::HbmState state;
    hbm::Trainer trainer{state, journal};

    void SetUp() override { bus.log_writes = false; }

    // Every in-use lane's delays strictly inside its true eyes at the trained Vref.
    void expect_trained_inside(std::uint32_t ch)
    {
        const auto& c = state.channels[ch];
        const auto& s = bus.phy.state[ch];
        for (std::uint32_t l = 0; l < JAL_HBM_LANES; ++l) {
            if (!(c.lanes[l].flags & JAL_HBM_LANE_IN_USE)) continue;
            const auto re = bus.phy.read_eye(ch, l, s.vref);
            const auto we = bus.phy.write_eye(ch, l, s.vref);
            EXPECT_GE(s.rd[l], re.lo) << "lane " << l;
            EXPECT_LE(s.rd[l], re.hi) << "lane " << l;
            EXPECT_GE(s.wr[l], we.lo) << "lane " << l;
            EXPECT_LE(s.wr[l], we.hi) << "lane " << l;
        }
    }
};

TEST_F(HbmTrainingTest, HealthyChannelTrainsAndGoesIntoService)
{
    trainer.train_channel(5);
    const auto& c = state.channels[5];
    EXPECT_EQ(c.status, JAL_HBM_CH_OK);
    EXPECT_TRUE(bus.phy.state[5].enabled);
    EXPECT_EQ(c.memtest_errors, 0u);
    EXPECT_GT(c.training_us, 0u);
    // The optimal Vref (or one step off, which has the same eye width) is found.
    EXPECT_LE(std::abs(static_cast<int>(c.vref) - bus.phy.truth[5].vref_opt), 1);
    // Write leveling inside [point, point + 3].
    EXPECT_GE(c.wrlvl, bus.phy.truth[5].wrlvl_point);
    EXPECT_LE(c.wrlvl, bus.phy.truth[5].wrlvl_point + 3);
    expect_trained_inside(5);
    jal_hbm_channel_report r;
    state.build_report(5, r);
    EXPECT_EQ(r.lanes[0].flags, JAL_HBM_LANE_IN_USE);
    EXPECT_EQ(r.lanes[64].flags, JAL_HBM_LANE_SPARE);
    EXPECT_GE(r.lanes[0].read_width, 2 * bus.phy.truth[5].lanes[0].rd_h + 1);
    EXPECT_GE(r.lanes[0].read_margin, bus.phy.truth[5].lanes[0].rd_h - 1);
}

TEST_F(HbmTrainingTest, ManyChannelsTrainWithEdgeFlicker)
{
    for (std::uint32_t ch = 0; ch < 24; ++ch) {
        trainer.train_channel(ch);
        EXPECT_EQ(state.channels[ch].status, JAL_HBM_CH_OK) << "channel " << ch;
        // The Vref search ends on a step with the widest eyes: the optimum or a neighbour.
        EXPECT_LE(std::abs(static_cast<int>(state.channels[ch].vref) - bus.phy.truth[ch].vref_opt),
                  1)
            << ch;
        expect_trained_inside(ch);
    }
}

TEST_F(HbmTrainingTest, VrefSearchFindsTheOptimumAnywhereInTheRange)
{
    // Optima at the edges and between coarse points; eyes narrow enough that a step two
    // off the optimum visibly loses width.
    const int optima[] = {0, 1, 3, 4, 7, 8, 12, 15, 20, 27, 30, 31};
    std::uint32_t ch = 40;
    for (const int opt : optima) {
        bus.phy.truth[ch].vref_opt = opt;
        trainer.train_channel(ch);
        EXPECT_EQ(state.channels[ch].status, JAL_HBM_CH_OK) << "optimum " << opt;
        EXPECT_LE(std::abs(static_cast<int>(state.channels[ch].vref) - opt), 1)
            << "optimum " << opt;
        expect_trained_inside(ch);
        ++ch;
    }
}

TEST_F(HbmTrainingTest, OneChannelPerStackTrainsInParallel)
{
    // One channel alone, then six channels on six stacks at once: the stacks' engines run
    // side by side, so the six take far less than six times as long (modelled time).
    std::uint64_t t0 = bus.now_ns;
    trainer.train_channel(3);
    const std::uint64_t one = bus.now_ns - t0;
    const std::uint32_t group[] = {4, 36, 68, 100, 132, 164};
    t0 = bus.now_ns;
    trainer.train_group(group);
    const std::uint64_t six = bus.now_ns - t0;
    for (const std::uint32_t ch : group) {
        EXPECT_EQ(state.channels[ch].status, JAL_HBM_CH_OK) << ch;
        EXPECT_TRUE(bus.phy.state[ch].enabled) << ch;
        expect_trained_inside(ch);
        EXPECT_GT(state.channels[ch].training_us, 0u);
        EXPECT_LE(state.channels[ch].training_us, six / 1000 + 1);
    }
    EXPECT_LT(six, 2 * one) << "one channel " << one << " ns, six in parallel " << six << " ns";
    EXPECT_GT(six, one / 2);
}

TEST_F(HbmTrainingTest, ChannelsOfOneStackShareItsEngine)
{
    std::uint64_t t0 = bus.now_ns;
    trainer.train_channel(3);
    const std::uint64_t one = bus.now_ns - t0;
    const std::uint32_t group[] = {5, 6};  // both on stack 0
    t0 = bus.now_ns;
    trainer.train_group(group);
    const std::uint64_t two = bus.now_ns - t0;
    EXPECT_EQ(state.channels[5].status, JAL_HBM_CH_OK);
    EXPECT_EQ(state.channels[6].status, JAL_HBM_CH_OK);
    expect_trained_inside(5);
    expect_trained_inside(6);
    EXPECT_GT(two, one * 3 / 2) << "commands of one stack queue on its engine";
}

TEST_F(HbmTrainingTest, AFailingChannelDropsOutWithoutDisturbingItsGroup)
{
    for (std::uint32_t l = 0; l < 5; ++l) bus.phy.truth[36].lanes[l].dead = true;  // beyond spares
    bus.phy.truth[68].lanes[9].dead = true;                                        // repairable
    bus.phy.truth[100].lanes[20].rd_h = -20;                                       // no read eye
    const std::uint32_t group[] = {4, 36, 68, 100, 132, 164};
    trainer.train_group(group);
    EXPECT_EQ(state.channels[4].status, JAL_HBM_CH_OK);
    EXPECT_EQ(state.channels[36].status, JAL_HBM_CH_FAILED);
    EXPECT_EQ(state.channels[36].fail_reason, hbm::kFailTooManyDeadLanes);
    EXPECT_EQ(state.channels[68].status, JAL_HBM_CH_REPAIRED);
    EXPECT_EQ(state.channels[100].status, JAL_HBM_CH_FAILED);
    EXPECT_EQ(state.channels[100].fail_reason, hbm::kFailNoReadEye);
    EXPECT_EQ(state.channels[132].status, JAL_HBM_CH_OK);
    EXPECT_EQ(state.channels[164].status, JAL_HBM_CH_OK);
    EXPECT_FALSE(bus.phy.state[36].enabled);
    EXPECT_FALSE(bus.phy.state[100].enabled);
    EXPECT_TRUE(bus.phy.state[68].enabled);
    for (const std::uint32_t ch : {4u, 68u, 132u, 164u}) expect_trained_inside(ch);
    EXPECT_LT(state.channels[36].training_us, state.channels[4].training_us) << "dropped out early";
}

TEST_F(HbmTrainingTest, DeadLanesAreRemappedOntoWorkingSpares)
{
    bus.phy.truth[7].lanes[3].dead = true;
    bus.phy.truth[7].lanes[40].dead = true;
    bus.phy.truth[7].lanes[64].dead = true;  // first spare dead too
    trainer.train_channel(7);
    const auto& c = state.channels[7];
    EXPECT_EQ(c.status, JAL_HBM_CH_REPAIRED);
    EXPECT_EQ(c.dead_lanes, 3);
    EXPECT_EQ(c.repair[0], 0xff);
    EXPECT_EQ(c.repair[1], 3);
    EXPECT_EQ(c.repair[2], 40);
    EXPECT_EQ(bus.phy.state[7].remap[1], 3);
    EXPECT_EQ(bus.phy.state[7].remap[2], 40);
    EXPECT_TRUE(bus.phy.state[7].enabled);
    EXPECT_TRUE(c.lanes[65].flags & JAL_HBM_LANE_IN_USE);
    EXPECT_TRUE(c.lanes[3].flags & JAL_HBM_LANE_DEAD);
    EXPECT_FALSE(c.lanes[3].flags & JAL_HBM_LANE_IN_USE);
    expect_trained_inside(7);
}

TEST_F(HbmTrainingTest, MoreDeadLanesThanWorkingSparesFailsTheChannel)
{
    for (std::uint32_t l : {1u, 2u, 3u}) bus.phy.truth[9].lanes[l].dead = true;
    bus.phy.truth[9].lanes[66].dead = true;
    bus.phy.truth[9].lanes[67].dead = true;  // 3 dead DQ, 2 working spares
    trainer.train_channel(9);
    EXPECT_EQ(state.channels[9].status, JAL_HBM_CH_FAILED);
    EXPECT_EQ(state.channels[9].fail_reason, hbm::kFailTooManyDeadLanes);
    EXPECT_FALSE(bus.phy.state[9].enabled);
}

TEST_F(HbmTrainingTest, ALaneWithNoEyeFailsTheChannel)
{
    bus.phy.truth[11].lanes[20].rd_h = -20;  // never opens at any Vref
    trainer.train_channel(11);
    EXPECT_EQ(state.channels[11].status, JAL_HBM_CH_FAILED);
    EXPECT_TRUE(state.channels[11].lanes[20].flags & JAL_HBM_LANE_NOEYE);
}

TEST_F(HbmTrainingTest, AStackWithTooManyFailedChannelsFails)
{
    // Stack 1 (channels 32..63): 5 channels with 5 dead DQ lanes each.
    for (std::uint32_t ch = 32; ch < 37; ++ch)
        for (std::uint32_t l = 0; l < 5; ++l) bus.phy.truth[ch].lanes[l].dead = true;
    // Stack 0: exactly the maximum fails.
    for (std::uint32_t ch = 0; ch < JAL_HBM_FAILED_CHANNELS_PER_STACK_MAX; ++ch)
        for (std::uint32_t l = 0; l < 5; ++l) bus.phy.truth[ch].lanes[l].dead = true;
    // Only train slices 0..20 (channels 0..62) to keep the test short.
    trainer.train_all((1ull << 21) - 1);
    EXPECT_EQ(state.stacks_failed_mask, 1u << 1);
    for (std::uint32_t ch = 32; ch < 63; ++ch) {
        EXPECT_EQ(state.channels[ch].status, JAL_HBM_CH_FAILED);
        EXPECT_FALSE(bus.phy.state[ch].enabled);
    }
    EXPECT_EQ(state.channels[10].status, JAL_HBM_CH_OK);
    EXPECT_EQ(state.channels[63].status, JAL_HBM_CH_UNTRAINED) << "slice 21 not in the mask";
    EXPECT_EQ(state.count(JAL_HBM_CH_FAILED), 31u + JAL_HBM_FAILED_CHANNELS_PER_STACK_MAX);
}

}  // namespace
