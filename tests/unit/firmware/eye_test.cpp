// Eye finding on synthetic pass masks.
#include <gtest/gtest.h>

#include "hbm/eye.hpp"

using jalfw::hbm::find_window;

namespace {
std::uint64_t taps(int lo, int hi)
{
    std::uint64_t m = 0;
    for (int t = lo; t <= hi; ++t) m |= 1ull << t;
    return m;
}
}  // namespace

TEST(EyeTest, FindsASimpleWindowAndCentresOnIt)
{
    const auto w = find_window(taps(20, 30));
    EXPECT_EQ(w.start, 20);
    EXPECT_EQ(w.width, 11);
    EXPECT_EQ(w.centre(), 25);
    EXPECT_EQ(w.margin(), 5);
}

TEST(EyeTest, NothingPassingMeansNoWindow) { EXPECT_EQ(find_window(0).width, 0); }

TEST(EyeTest, ALonePassIsNotAWindow)
{
    EXPECT_EQ(find_window(1ull << 40).width, 0);
    // A lone flicker far outside the eye must not be chosen or change the centre.
    const auto w = find_window(taps(10, 20) | (1ull << 50));
    EXPECT_EQ(w.start, 10);
    EXPECT_EQ(w.width, 11);
}

TEST(EyeTest, LonePassesWiderApartThanTheEyeAreIgnored)
{
    // Alternating edge noise (every other tap) never forms a window.
    std::uint64_t noise = 0;
    for (int t = 0; t < 64; t += 2) noise |= 1ull << t;
    EXPECT_EQ(find_window(noise).width, 0);
    const auto w = find_window(noise | taps(30, 35));
    EXPECT_GE(w.start, 29);
    EXPECT_LE(w.start + w.width - 1, 36);
    EXPECT_GE(w.centre(), 31);
    EXPECT_LE(w.centre(), 34);
}

TEST(EyeTest, WidestOfTwoWindowsWins)
{
    const auto w = find_window(taps(2, 6) | taps(30, 45));
    EXPECT_EQ(w.start, 30);
    EXPECT_EQ(w.width, 16);
    const auto v = find_window(taps(2, 20) | taps(30, 35));
    EXPECT_EQ(v.start, 2);
}

TEST(EyeTest, WindowTouchingTheLastTap)
{
    const auto w = find_window(taps(60, 63));
    EXPECT_EQ(w.start, 60);
    EXPECT_EQ(w.width, 4);
    EXPECT_EQ(find_window(taps(0, 63)).width, 64);
}

TEST(EyeTest, TwoConsecutivePassesAreTheSmallestWindow)
{
    const auto w = find_window(taps(7, 8));
    EXPECT_EQ(w.width, 2);
    EXPECT_EQ(w.centre(), 7);
    EXPECT_EQ(w.margin(), 0);
}
