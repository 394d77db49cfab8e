// Slice reset release, self-test and harvesting rules.
#include <gtest/gtest.h>

#include "fake_bus.hpp"
#include "firmware/slices/slice_manager.hpp"
#include "jal/hw/status.h"

using jal::fw::slices::SliceManager;

namespace {

struct HarvestTest : ::testing::Test {
    fake::FakeBus bus;
    SliceManager slices;

    std::uint32_t boot_slices()
    {
        EXPECT_EQ(slices.release_resets(), JAL_STATUS_OK);
        EXPECT_EQ(slices.run_bist(), JAL_STATUS_OK);
        return slices.harvest();
    }
};

TEST_F(HarvestTest, AllGoodSlicesAreEnabledAndPublished)
{
    EXPECT_EQ(boot_slices(), JAL_STATUS_OK);
    EXPECT_EQ(slices.enabled(), ~0ull);
    EXPECT_EQ(bus.slices.enable, ~0ull);
    EXPECT_FALSE(slices.degraded());
}

TEST_F(HarvestTest, ResetsAreReleasedCumulativelyInGroupsWithSettleTime)
{
    bus.slices.fused = 1ull << 3;
    std::vector<std::pair<std::uint64_t, std::uint64_t>> releases;  // (time, mask)
    std::uint32_t lo = 0;
    bus.write_hook = [&](std::uint32_t addr, std::uint32_t v) {
        if (addr == JAL_SLICE_RESET_LO) lo = v;
        if (addr == JAL_SLICE_RESET_HI)
            releases.emplace_back(bus.now_us(), std::uint64_t{v} << 32 | lo);
    };
    ASSERT_EQ(slices.release_resets(), JAL_STATUS_OK);
    ASSERT_EQ(releases.size(), 8u);  // 63 slices in groups of 8
    std::uint64_t prev = 0;
    for (std::size_t i = 0; i < releases.size(); ++i) {
        const std::uint64_t m = releases[i].second;
        EXPECT_EQ(m & prev, prev) << "releases are cumulative";
        EXPECT_LE(std::popcount(m & ~prev), static_cast<int>(JAL_SLICE_RESET_GROUP));
        EXPECT_EQ(m & (1ull << 3), 0u) << "fused slices stay in reset";
        if (i) {
            EXPECT_GE(releases[i].first - releases[i - 1].first, JAL_SLICE_RESET_SETTLE_US);
        }
        prev = m;
    }
    EXPECT_EQ(prev, ~(1ull << 3));
}

TEST_F(HarvestTest, FusedFailedAndSilentSlicesAreHarvested)
{
    bus.slices.fused = 1ull << 0;
    bus.slices.failing = 1ull << 10;
    bus.slices.silent = 1ull << 40;
    EXPECT_EQ(boot_slices(), JAL_STATUS_OK);
    EXPECT_EQ(slices.enabled(), ~((1ull << 0) | (1ull << 10) | (1ull << 40)));
    EXPECT_EQ(slices.bist_failed(), 1ull << 10);
    EXPECT_EQ(slices.bist_timeout(), 1ull << 40);
    EXPECT_TRUE(slices.degraded());
    // Failed slices are put back into reset.
    EXPECT_EQ(bus.slices.reset & ((1ull << 10) | (1ull << 40)), 0u);

    jal_slice_map map;
    slices.build_map(map);
    EXPECT_EQ(map.num_enabled, 61u);
    EXPECT_EQ(map.slices[0].state, JAL_SLICE_FUSED);
    EXPECT_EQ(map.slices[10].state, JAL_SLICE_FAILED_BIST);
    EXPECT_EQ(map.slices[40].state, JAL_SLICE_BIST_TIMEOUT);
    EXPECT_EQ(map.slices[1].logical_id, 0);
    EXPECT_EQ(map.slices[11].logical_id, 9);
    EXPECT_EQ(map.slices[0].logical_id, 0xff);
    EXPECT_EQ(map.logical_to_physical[0], 1);
    EXPECT_EQ(map.logical_to_physical[60], 63);
    EXPECT_EQ(map.logical_to_physical[61], 0xff);
    EXPECT_GT(map.slices[5].bist_us, 0u);
}

TEST_F(HarvestTest, BistTimeoutIsBounded)
{
    bus.slices.silent = ~0ull;
    const std::uint64_t t0 = bus.now_us();
    ASSERT_EQ(slices.release_resets(), JAL_STATUS_OK);
    ASSERT_EQ(slices.run_bist(), JAL_STATUS_OK);
    EXPECT_LT(bus.now_us() - t0, jal::fw::slices::kBistTimeoutUs + 1000);
    EXPECT_EQ(slices.harvest(), JAL_STATUS_HW_FAILED);
}

TEST_F(HarvestTest, ProductRuleFailsTheChipBelowMinimumGoodSlices)
{
    // 64 - 9 = 55 < 56
    bus.slices.failing = 0x1ffull;
    EXPECT_EQ(boot_slices(), JAL_STATUS_HW_FAILED);
}

TEST_F(HarvestTest, ProductRuleAcceptsExactlyTheMinimum)
{
    bus.slices.fused = 0xffull;  // 56 left
    EXPECT_EQ(boot_slices(), JAL_STATUS_OK);
}

TEST_F(HarvestTest, NoMemorySlicesAreDisabled)
{
    EXPECT_EQ(boot_slices(), JAL_STATUS_OK);
    slices.disable_no_memory(7);
    EXPECT_EQ(slices.publish(), JAL_STATUS_OK);
    EXPECT_EQ(bus.slices.enable & (1ull << 7), 0u);
    jal_slice_map map;
    slices.build_map(map);
    EXPECT_EQ(map.slices[7].state, JAL_SLICE_NO_MEMORY);
    EXPECT_EQ(map.num_enabled, 63u);
}

TEST_F(HarvestTest, IdleSlicesAreGatedBusyOnesNot)
{
    EXPECT_EQ(boot_slices(), JAL_STATUS_OK);
    EXPECT_EQ(slices.update_gating(0xf0ull), 4u);
    EXPECT_EQ(bus.slices.gate, ~0xf0ull);
    bus.writes.clear();
    (void)slices.update_gating(0xf0ull);
    EXPECT_TRUE(bus.writes_to(JAL_SLICE_GATE_LO).empty()) << "unchanged gating is not rewritten";
}

}  // namespace
