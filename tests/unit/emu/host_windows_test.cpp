// The command processor's host-window table on its own: lookups by function and space,
// the table's capacity, and what each clear takes.
#include "emu/cp/host_windows.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/status.h"

#include <gtest/gtest.h>

namespace {

using jal::emu::HostWindows;
constexpr std::uint64_t kPage = 4096;

TEST(HostWindows, ARangeMustLieInsideOneWindowOfItsFunctionAndSpace)
{
    HostWindows w;
    ASSERT_EQ(w.add(1, 5, 0x10000, 4 * kPage), JAL_STATUS_OK);
    ASSERT_EQ(w.add(1, 5, 0x14000, kPage), JAL_STATUS_OK);  // adjacent, a window of its own
    EXPECT_TRUE(w.allows(1, 5, 0x10000, 4 * kPage));
    EXPECT_TRUE(w.allows(1, 5, 0x13fff, 1));
    EXPECT_TRUE(w.allows(1, 5, 0x14000, kPage));
    // Across the two windows: not inside one (a copy names one contiguous range).
    EXPECT_FALSE(w.allows(1, 5, 0x13000, 2 * kPage));
    EXPECT_FALSE(w.allows(1, 5, 0xffff, 2));
    EXPECT_FALSE(w.allows(1, 5, 0x10000, 0));
    EXPECT_FALSE(w.allows(1, 5, ~0ull - 8, 64));  // wraps
    EXPECT_FALSE(w.allows(1, 6, 0x10000, 16));    // another space
    EXPECT_FALSE(w.allows(2, 5, 0x10000, 16));    // another function's space 5
    EXPECT_TRUE(w.allows(2, 0, 0x99999999, 16));  // space 0: not restricted
}

TEST(HostWindows, TheTableHoldsJalHostWindowsThenIsBusy)
{
    HostWindows w;
    for (std::uint32_t i = 0; i < JAL_HOST_WINDOWS; ++i)
        ASSERT_EQ(w.add(i % 4, 1 + i % 3, std::uint64_t{i} * kPage, kPage), JAL_STATUS_OK) << i;
    EXPECT_EQ(w.add(0, 1, 0, kPage), JAL_STATUS_BUSY);
    EXPECT_EQ(w.count(), JAL_HOST_WINDOWS);
    ASSERT_EQ(w.remove(0, 1, 0, kPage), JAL_STATUS_OK);
    EXPECT_EQ(w.add(0, 1, 0, kPage), JAL_STATUS_OK);
}

TEST(HostWindows, RemoveNeedsTheExactWindowAndClearsTakeOnlyTheirOwn)
{
    HostWindows w;
    ASSERT_EQ(w.add(1, 5, 0x10000, 2 * kPage), JAL_STATUS_OK);
    ASSERT_EQ(w.add(1, 6, 0x20000, kPage), JAL_STATUS_OK);
    ASSERT_EQ(w.add(2, 5, 0x30000, kPage), JAL_STATUS_OK);
    EXPECT_EQ(w.remove(1, 5, 0x10000, kPage), JAL_STATUS_INVALID_FIELD);  // not its size
    EXPECT_EQ(w.remove(2, 5, 0x10000, 2 * kPage), JAL_STATUS_INVALID_FIELD);
    w.clear_space(1, 5);
    EXPECT_FALSE(w.allows(1, 5, 0x10000, 16));
    EXPECT_TRUE(w.allows(1, 6, 0x20000, 16));
    w.clear_function(1);
    EXPECT_FALSE(w.allows(1, 6, 0x20000, 16));
    EXPECT_TRUE(w.allows(2, 5, 0x30000, 16));
    EXPECT_EQ(w.count(), 1u);
    w.clear();
    EXPECT_EQ(w.count(), 0u);
}

}  // namespace
