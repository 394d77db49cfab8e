// Page retirement in the firmware's page allocator (docs/reliability.md, "Fault model"): a
// page an uncorrectable ECC error poisoned leaves service at once when free and when
// released when taken; a channel that failed retraining takes its pages with it. The
// capacity drops by what left, once.
#include <gtest/gtest.h>

#include "firmware/hbm/hbm_state.hpp"
#include "firmware/memory/page_allocator.hpp"

namespace {

using namespace jal::fw;
using memory::kPagesPerChannel;
using memory::kPagesPerSlice;
using memory::page_phys;

class PageRetire : public ::testing::Test {
protected:
    void SetUp() override
    {
        for (auto& c : hbm.channels) c.status = JAL_HBM_CH_OK;
        pages.init(1ull << 0, hbm);  // slice 0: channels 0-2
    }
    hbm::HbmState hbm;
    memory::PageAllocator pages;
};

TEST_F(PageRetire, AFreePageLeavesAtOnce)
{
    const std::uint64_t phys = page_phys(0, 5);
    ASSERT_TRUE(pages.retire(phys));
    EXPECT_EQ(pages.capacity(0), kPagesPerSlice - 1);
    EXPECT_EQ(pages.free_pages(0), kPagesPerSlice - 1);
    EXPECT_FALSE(pages.is_free(phys));
    EXPECT_FALSE(pages.retire(phys)) << "retired twice";
    for (std::uint32_t i = 0; i < kPagesPerSlice - 1; ++i) EXPECT_NE(pages.take(0), 5u);
    EXPECT_EQ(pages.take(0), memory::kNoPage);
}

TEST_F(PageRetire, ATakenPageLeavesWhenReleased)
{
    const std::uint32_t p = pages.take(0);
    const std::uint64_t phys = page_phys(0, p);
    ASSERT_TRUE(pages.retire(phys));
    EXPECT_EQ(pages.capacity(0), kPagesPerSlice - 1);
    EXPECT_EQ(pages.free_pages(0), kPagesPerSlice - 1);
    EXPECT_TRUE(pages.release(phys)) << "the owner's free succeeds";
    EXPECT_FALSE(pages.is_free(phys));
    EXPECT_EQ(pages.free_pages(0), kPagesPerSlice - 1);
    EXPECT_FALSE(pages.release(phys)) << "a second release is a double free";
}

TEST_F(PageRetire, PagesOutsideServiceAreNotRetired)
{
    EXPECT_FALSE(pages.retire(page_phys(1, 0))) << "slice 1 is not enabled";
    EXPECT_FALSE(pages.retire(page_phys(0, 0) + 4096)) << "not a page address";
}

TEST_F(PageRetire, AFailedChannelTakesItsPagesOnce)
{
    const std::uint32_t taken = pages.take(0);   // page 0: channel 0
    ASSERT_TRUE(pages.retire(page_phys(0, 1)));  // a free page of channel 0, retired before
    ASSERT_TRUE(pages.retire_channel(0));
    EXPECT_EQ(pages.capacity(0), kPagesPerSlice - kPagesPerChannel);
    EXPECT_EQ(pages.free_pages(0), kPagesPerSlice - kPagesPerChannel);
    EXPECT_TRUE(pages.release(page_phys(0, taken))) << "freed into nothing, not stray";
    EXPECT_EQ(pages.free_pages(0), kPagesPerSlice - kPagesPerChannel);
    EXPECT_FALSE(pages.retire_channel(0));
    EXPECT_FALSE(pages.retire(page_phys(0, 2))) << "the channel is out of service";
}

}  // namespace
