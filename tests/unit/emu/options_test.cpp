#include "emu/cli/options.hpp"

#include <gtest/gtest.h>

#include <stdexcept>

using namespace jal::emu;

TEST(EmuOptions, SliceListsTakeNumbersAndRanges)
{
    EXPECT_EQ(parse_slice_list(""), 0u);
    EXPECT_EQ(parse_slice_list("3,17"), (1ull << 3) | (1ull << 17));
    EXPECT_EQ(parse_slice_list("60-63"), 0xfull << 60);
    EXPECT_THROW(parse_slice_list("64"), std::invalid_argument);
    EXPECT_THROW(parse_slice_list("3,,4"), std::invalid_argument);
    EXPECT_THROW(parse_slice_list("5-2"), std::invalid_argument);
    EXPECT_THROW(parse_slice_list("x"), std::invalid_argument);
}

TEST(EmuOptions, LaneListsTakeChannelColonLane)
{
    const auto v = parse_lane_list("5:12,191:67");
    ASSERT_EQ(v.size(), 2u);
    EXPECT_EQ(v[0], std::make_pair(5u, 12u));
    EXPECT_EQ(v[1], std::make_pair(191u, 67u));
    EXPECT_THROW(parse_lane_list("192:0"), std::invalid_argument);
    EXPECT_THROW(parse_lane_list("1:68"), std::invalid_argument);
    EXPECT_THROW(parse_lane_list("7"), std::invalid_argument);
}
