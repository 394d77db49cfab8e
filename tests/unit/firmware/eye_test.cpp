// Eye finding on synthetic pass masks.
#include <gtest/gtest.h>

#include "firmware/hbm/eye.hpp"

#include <algorithm>
#include <iterator>

using jal::fw::hbm::find_window;

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

TEST(EyeTest, NothingPassingMeansNoWindow)
{
    EXPECT_EQ(find_window(0).width, 0);
}

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

namespace {
// The tap-by-tap definition find_window must agree with: a window starts at two
// consecutive passes and runs while taps pass; the widest wins, the lowest of equals.
jal::fw::hbm::Window reference_window(std::uint64_t pass)
{
    jal::fw::hbm::Window best;
    std::uint32_t t = 0;
    while (t < 64) {
        const bool here = (pass >> t) & 1, next = t + 1 < 64 && ((pass >> (t + 1)) & 1);
        if (!(here && next)) {
            ++t;
            continue;
        }
        const std::uint32_t start = t;
        while (t < 64 && ((pass >> t) & 1)) ++t;
        if (t - start > best.width)
            best = {static_cast<std::uint8_t>(start), static_cast<std::uint8_t>(t - start)};
    }
    return best;
}

std::uint64_t next_random(std::uint64_t& x)
{
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
}
}  // namespace

TEST(EyeTest, BitTrickSearchAgreesWithTheTapByTapDefinition)
{
    std::uint64_t rng = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 200000; ++i) {
        std::uint64_t m = next_random(rng);
        // Mix dense, sparse and eye-like masks (a run plus edge noise).
        if (i % 3 == 1) m &= next_random(rng);
        if (i % 3 == 2) {
            const std::uint32_t lo = next_random(rng) % 64, len = next_random(rng) % 30;
            m = (m & next_random(rng) & next_random(rng)) |
                taps(static_cast<int>(lo), static_cast<int>(std::min(63u, lo + len)));
        }
        const auto got = find_window(m), want = reference_window(m);
        ASSERT_EQ(got.width, want.width) << std::hex << m;
        ASSERT_EQ(got.start, want.start) << std::hex << m;
    }
    EXPECT_EQ(find_window(~0ull).width, 64);
    EXPECT_EQ(find_window(1ull << 63 | 1ull << 62).start, 62);
}

TEST(BitMatrixTest, TransposeMovesBitRowColToColRow)
{
    std::uint64_t rng = 12345;
    for (int round = 0; round < 100; ++round) {
        std::uint32_t a[32], b[32];
        for (auto& w : a) w = static_cast<std::uint32_t>(next_random(rng));
        std::copy(std::begin(a), std::end(a), std::begin(b));
        jal::fw::hbm::transpose32(b);
        for (std::uint32_t r = 0; r < 32; ++r)
            for (std::uint32_t c = 0; c < 32; ++c)
                ASSERT_EQ((b[c] >> r) & 1, (a[r] >> c) & 1) << r << "," << c;
    }
}

TEST(BitMatrixTest, CountsOn64BitWords)
{
    using jal::fw::hbm::cto64;
    using jal::fw::hbm::ctz64;
    EXPECT_EQ(ctz64(1), 0u);
    EXPECT_EQ(ctz64(1ull << 40), 40u);
    EXPECT_EQ(ctz64(0), 64u);
    EXPECT_EQ(cto64(~0ull), 64u);
    EXPECT_EQ(cto64(0x7), 3u);
    EXPECT_EQ(cto64(0xffffffffull), 32u);
    EXPECT_EQ(cto64(0x1ffffffffull), 33u);
}
