// Allocating, freeing and reclaiming most of the chip's HBM through the firmware image: an
// admin command that maps or unmaps tens of thousands of pages must not starve the 50 ms
// watchdog, which would reset the chip for every tenant.
#include <chrono>
#include <optional>

#include <gtest/gtest.h>

#include <fixture/emu_process.hpp>
#include <jal/chip_function.hpp>
#include <jal/hw/chip.h>
#include <jal/jal.hpp>

namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;

// A booted chip, its boot count, and the checks every test ends with: no watchdog reset, no
// chip reset, a clean emulator exit.
class LargeMemory : public ::testing::Test {
protected:
    LargeMemory() : fn(jal::ChipFunction::open(0, emu.open_options())) {}
    void SetUp() override
    {
        ASSERT_EQ(fn.wait_ready(jal::test::kBootTimeout).state, jal::DeviceState::ready);
        boots = fn.identify().boot_count;
        dev.emplace(0, emu.socket_dir());
    }
    void expect_no_reset()
    {
        EXPECT_EQ(fn.telemetry().watchdog_resets, 0u) << "an admin command starved the watchdog";
        EXPECT_EQ(fn.identify().boot_count, boots) << "the chip was reset";
        EXPECT_EQ(emu.stop(), "");
    }

    jal::test::EmuProcess emu;
    jal::ChipFunction fn;
    uint32_t boots = 0;
    std::optional<jal::runtime::Device> dev;
};

TEST_F(LargeMemory, AllocatingAndFreeing128GiBDoesNotTripTheWatchdog)
{
    {
        jal::runtime::Context ctx(*dev);
        // A second tenant's context, which must survive the first one's large free.
        jal::runtime::Context other(*dev);
        jal::runtime::Memory keep(other, 2u << 20, JAL_PLACE_SLICE, 1);
        {
            jal::runtime::Memory big(ctx, 128 * kGiB, JAL_PLACE_INTERLEAVED, ~uint64_t{0});
            EXPECT_EQ(big.size(), 128 * kGiB);
        }  // freed here
        // And through reclaim: a context destroyed while it still holds 100 GiB (the
        // allocation is never freed; destroying the context takes it on the device).
        jal_mem_t held = nullptr;
        ASSERT_EQ(
            jal_mem_alloc(ctx.get(), 100 * kGiB, JAL_PLACE_INTERLEAVED, ~uint64_t{0}, 0, &held),
            JAL_STATUS_OK);
        EXPECT_EQ(fn.telemetry().watchdog_resets, 0u);
        EXPECT_NO_THROW(jal::runtime::Memory(other, 2u << 20, JAL_PLACE_SLICE, 1));
        EXPECT_EQ(ctx.destroy(), 1u) << "the context still held the allocation";
        EXPECT_EQ(jal_mem_free(held), JAL_STATUS_OK) << "after its context: nothing to do";
        jal::runtime::Context fresh(*dev);
        EXPECT_NO_THROW(
            jal::runtime::Memory(fresh, 100 * kGiB, JAL_PLACE_INTERLEAVED, ~uint64_t{0}))
            << "the reclaimed pages are free again";
    }
    expect_no_reset();
}

TEST_F(LargeMemory, FreeingAReplicatedAllocationDoesNotTripTheWatchdog)
{
    // 96 pages replicated on all 64 slices are 6,144 physical pages: freeing them scrubs each
    // (9.2 µs), 57 ms of firmware work in one admin command. Fed per virtual page, the
    // watchdog reset the chip, the free timed out and every later command of the tenant
    // failed.
    jal::runtime::Context ctx(*dev);
    {
        jal::runtime::Memory wide(ctx, 96 * (2u << 20), JAL_PLACE_REPLICATED, ~uint64_t{0});
        EXPECT_EQ(wide.info().replicas, 64u);
        EXPECT_NO_THROW(wide.free());
    }
    EXPECT_NO_THROW(jal::runtime::Memory(ctx, 2u << 20, JAL_PLACE_SLICE, 1))
        << "the context is still known to the firmware";
    expect_no_reset();
}

}  // namespace
