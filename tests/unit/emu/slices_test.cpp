#include "emu/chip/slices.hpp"
#include "jal/hw/mgmt.h"

#include <gtest/gtest.h>

using jal::emu::Slices;

namespace {
constexpr std::uint32_t sl(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_SLICE;
}
std::uint64_t mask(const Slices& s, std::uint32_t lo_reg, std::uint32_t hi_reg, std::uint64_t now)
{
    return s.read(sl(lo_reg), now) | (std::uint64_t{s.read(sl(hi_reg), now)} << 32);
}
}  // namespace

TEST(Slices, SelfTestTakesTimeAndReportsFailures)
{
    const std::uint64_t fused = 1ull << 3, failing = 1ull << 40;
    Slices s(1, fused, failing);
    EXPECT_EQ(mask(s, JAL_SLICE_FUSE_LO, JAL_SLICE_FUSE_HI, 0), fused);
    s.write(sl(JAL_SLICE_RESET_LO), 0xffffffff, 0);
    s.write(sl(JAL_SLICE_RESET_HI), 0xffffffff, 0);
    s.write(sl(JAL_SLICE_BIST_START_LO), 0xffffffff, 100);
    s.write(sl(JAL_SLICE_BIST_START_HI), 0xffffffff, 100);
    EXPECT_EQ(mask(s, JAL_SLICE_BIST_DONE_LO, JAL_SLICE_BIST_DONE_HI, 101), 0u);
    const std::uint64_t later = 100 + JAL_SLICE_BIST_US * 2;
    const std::uint64_t done = mask(s, JAL_SLICE_BIST_DONE_LO, JAL_SLICE_BIST_DONE_HI, later);
    EXPECT_EQ(done, ~fused) << "a fused slice never answers";
    EXPECT_EQ(mask(s, JAL_SLICE_BIST_PASS_LO, JAL_SLICE_BIST_PASS_HI, later), ~fused & ~failing);
}

TEST(Slices, SliceInResetNeverFinishesSelfTest)
{
    Slices s(1, 0, 0);
    s.write(sl(JAL_SLICE_RESET_LO), 0x1, 0);
    s.write(sl(JAL_SLICE_BIST_START_LO), 0x3, 0);
    EXPECT_EQ(s.read(sl(JAL_SLICE_BIST_DONE_LO), 1'000'000), 0x1u);
}

TEST(Slices, FusedSlicesCannotBeEnabledAndGatingCountsPower)
{
    Slices s(1, 0x1, 0);
    s.write(sl(JAL_SLICE_RESET_LO), 0xf, 0);
    s.write(sl(JAL_SLICE_ENABLE_LO), 0xf, 0);
    EXPECT_EQ(s.enabled(), 0xeu);
    EXPECT_EQ(s.powered_count(), 3u);
    s.write(sl(JAL_SLICE_GATE_LO), 0x2, 0);
    EXPECT_EQ(s.powered_count(), 2u);
    s.set_synthetic_busy(true);
    EXPECT_EQ(s.read(sl(JAL_SLICE_BUSY_LO), 0), 0xeu);
}
