// Contexts and placed device memory through a real jal-emu: placement reported per page,
// freed memory reusable, leaks reported when a context is destroyed.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "runtime_fixture.hpp"

namespace {

using namespace jal::runtime;
using jal::test::RuntimeTest;

constexpr uint64_t kPage = JAL_PAGE_SIZE;

class MemoryTest : public RuntimeTest {};

TEST_F(MemoryTest, SlicePlacementPutsEveryPageOnTheSlice)
{
    Context ctx(dev());
    Memory mem(ctx, 3 * kPage + 1, JAL_PLACE_SLICE, 1ull << 5);
    EXPECT_GE(mem.va(), JAL_VA_BASE);
    EXPECT_EQ(mem.size(), 4 * kPage);
    EXPECT_EQ(mem.info().pages, 4u);
    EXPECT_EQ(mem.info().replicas, 1u);
    auto pages = mem.placement();
    ASSERT_EQ(pages.size(), 4u);
    for (auto& p : pages) {
        EXPECT_EQ(p.slice, 5u);
        // Slice 5 owns channels 15..17 (chip.h map).
        EXPECT_GE(p.channel_lo, 15u);
        EXPECT_LE(p.channel_lo, 17u);
        EXPECT_EQ(p.phys % kPage, 0u);
    }
}

TEST_F(MemoryTest, InterleavedPlacementRotatesOverTheMask)
{
    Context ctx(dev());
    uint64_t mask = (1ull << 2) | (1ull << 7) | (1ull << 40);
    Memory mem(ctx, 7 * kPage, JAL_PLACE_INTERLEAVED, mask);
    auto pages = mem.placement();
    ASSERT_EQ(pages.size(), 7u);
    const uint8_t order[] = {2, 7, 40};
    for (size_t i = 0; i < pages.size(); i++)
        EXPECT_EQ(pages[i].slice, order[i % 3]) << "page " << i;
    // From a later page on.
    auto tail = mem.placement(5);
    ASSERT_EQ(tail.size(), 2u);
    EXPECT_EQ(tail[0].slice, order[5 % 3]);
}

TEST_F(MemoryTest, ReplicatedPlacementHasACopyOnEverySlice)
{
    Context ctx(dev());
    Memory mem(ctx, 2 * kPage, JAL_PLACE_REPLICATED, 0b1011);
    EXPECT_EQ(mem.info().replicas, 3u);
    auto pages = mem.placement();
    ASSERT_EQ(pages.size(), 6u);  // page-major: 2 pages x 3 replicas
    const uint8_t slices[] = {0, 1, 3};
    for (size_t i = 0; i < pages.size(); i++) {
        EXPECT_EQ(pages[i].replica, i % 3);
        EXPECT_EQ(pages[i].slice, slices[i % 3]);
    }
}

TEST_F(MemoryTest, AlignmentIsHonoured)
{
    Context ctx(dev());
    Memory small(ctx, kPage, JAL_PLACE_SLICE, 1);
    Memory aligned(ctx, kPage, JAL_PLACE_SLICE, 1, 1ull << 30);
    EXPECT_EQ(aligned.va() % (1ull << 30), 0u);
    // Below the page size means the page.
    Memory page_aligned(ctx, kPage, JAL_PLACE_SLICE, 1, 4096);
    EXPECT_EQ(page_aligned.va() % kPage, 0u);
}

TEST_F(MemoryTest, BadRequestsAreRefusedWithTheirStatus)
{
    Context ctx(dev());
    auto status_of = [&](auto&& f) {
        try {
            f();
        } catch (const jal::Error& e) {
            return e.status();
        }
        return JAL_STATUS_OK;
    };
    EXPECT_EQ(status_of([&] { Memory(ctx, kPage, JAL_PLACE_SLICE, 0b11); }),
              JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(status_of([&] { Memory(ctx, kPage, JAL_PLACE_SLICE, 0); }), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(status_of([&] { Memory(ctx, kPage, static_cast<jal_placement>(9), 1); }),
              JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(status_of([&] { Memory(ctx, kPage, JAL_PLACE_SLICE, 1, 3 * kPage); }),
              JAL_STATUS_INVALID_FIELD);
    // More than a slice holds (3 channels of 1.125 GiB).
    EXPECT_EQ(status_of([&] { Memory(ctx, 4ull << 30, JAL_PLACE_SLICE, 1); }),
              JAL_STATUS_NO_MEMORY);
}

TEST_F(MemoryTest, FreedMemoryCanBeAllocatedAgain)
{
    Context ctx(dev());
    // Nearly all of slice 9, twice.
    uint64_t big = 3ull * 1152 * (1ull << 20) - 4 * kPage;
    {
        Memory a(ctx, big, JAL_PLACE_SLICE, 1ull << 9);
        EXPECT_THROW(Memory(ctx, 8 * kPage, JAL_PLACE_SLICE, 1ull << 9), jal::Error);
        a.free();
    }
    Memory again(ctx, big, JAL_PLACE_SLICE, 1ull << 9);
    EXPECT_EQ(again.info().pages, big / kPage);
}

TEST_F(MemoryTest, DestroyingAContextReportsWhatItStillHeld)
{
    std::vector<std::string> logged;
    jal_set_log_handler(
        [](int, const char* m, void* user) {
            static_cast<std::vector<std::string>*>(user)->push_back(m);
        },
        &logged);
    Context ctx(dev());
    Memory kept(ctx, kPage, JAL_PLACE_SLICE, 1);
    jal_mem_t leaked1, leaked2;
    ASSERT_EQ(jal_mem_alloc(ctx.get(), kPage, JAL_PLACE_SLICE, 1, 0, &leaked1), JAL_STATUS_OK);
    ASSERT_EQ(jal_mem_alloc(ctx.get(), 2 * kPage, JAL_PLACE_SLICE, 2, 0, &leaked2), JAL_STATUS_OK);
    kept.free();
    EXPECT_EQ(ctx.destroy(), 2u);
    jal_set_log_handler(nullptr, nullptr);
    ASSERT_EQ(logged.size(), 2u);
    EXPECT_NE(logged[0].find("leaked allocation"), std::string::npos) << logged[0];
    // The handles can still be released; the memory went with the context.
    EXPECT_EQ(jal_mem_free(leaked1), JAL_STATUS_OK);
    EXPECT_EQ(jal_mem_free(leaked2), JAL_STATUS_OK);
    // And the device has the pages back: a new context gets slice 1 in full.
    Context fresh(dev());
    Memory big(fresh, 3ull * 1152 * (1ull << 20) - 4 * kPage, JAL_PLACE_SLICE, 1);
}

TEST_F(MemoryTest, CApiReportsErrorsWithAMessage)
{
    jal_context_t ctx;
    ASSERT_EQ(jal_context_create(dev().get(), &ctx), JAL_STATUS_OK);
    jal_mem_t mem;
    EXPECT_EQ(jal_mem_alloc(ctx, 0, JAL_PLACE_SLICE, 1, 0, &mem), JAL_STATUS_INVALID_LENGTH);
    EXPECT_NE(std::string(jal_last_error_message()), "");
    EXPECT_EQ(jal_mem_alloc(ctx, kPage, JAL_PLACE_SLICE, 1, 0, nullptr), JAL_STATUS_INVALID_FIELD);
    uint32_t leaked = 99;
    EXPECT_EQ(jal_context_destroy(ctx, &leaked), JAL_STATUS_OK);
    EXPECT_EQ(leaked, 0u);
}

}  // namespace
