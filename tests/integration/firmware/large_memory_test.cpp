// Allocating, freeing and reclaiming most of the chip's HBM through the firmware image: an
// admin command that maps or unmaps tens of thousands of pages must not starve the 50 ms
// watchdog, which would reset the chip for every tenant.
#include <chrono>
#include <optional>

#include <gtest/gtest.h>

#include <fixture/emu_process.hpp>
#include <jal/chip_function.hpp>
#include <jal/hw/chip.h>
#include <jal/hw/pci.h>
#include <jal/hw/regs.h>
#include <jal/jal.hpp>

#include "backend/direct/direct_connection.hpp"

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

TEST_F(LargeMemory, ALongCommandOutlastsAShortAdminTimeoutWhileTheFirmwareMovesOn)
{
    // Mapping and freeing 128 GiB is 65,536 pages each way (each scrubbed when freed): on an
    // idle machine the free alone outlasts a 300 ms admin timeout, and under a sanitizer or
    // load both do many times over; the timeout counts only time without firmware progress.
    // Before JAL_REG_ADMIN_PROGRESS the free timed out, the library lost its result and the
    // next command found the queue failed by the late completion.
    jal::direct::DirectConnection watcher(jal::direct::SeqpacketSocket::connect(emu.socket_path(0)),
                                          std::chrono::seconds(5));
    watcher.hello("progress-watcher");
    auto progress = [&] {
        return static_cast<uint32_t>(watcher.reg_read(JAL_BAR_REGS, JAL_REG_ADMIN_PROGRESS, 4));
    };

    jal_open_options_t options{};
    options.struct_size = sizeof options;
    options.emu_dir = emu.socket_dir().c_str();
    options.admin_timeout_ms = 300;
    jal_device_t raw = nullptr;
    ASSERT_EQ(jal_device_open(0, &options, &raw), JAL_STATUS_OK) << jal_last_error_message();
    jal::runtime::Handle<jal_device_t, jal_device_close> device(raw);
    jal_context_t ctx = nullptr;
    ASSERT_EQ(jal_context_create(device.get(), &ctx), JAL_STATUS_OK) << jal_last_error_message();

    jal_mem_t big = nullptr;
    const uint32_t before = progress();
    ASSERT_EQ(jal_mem_alloc(ctx, 128 * kGiB, JAL_PLACE_INTERLEAVED, ~uint64_t{0}, 0, &big),
              JAL_STATUS_OK)
        << jal_last_error_message();
    const uint32_t mapped = progress();
    EXPECT_EQ(jal_mem_free(big), JAL_STATUS_OK) << jal_last_error_message();
    const uint32_t freed = progress();
    // One step at the command and one every 256 pages: the host saw the work move.
    EXPECT_GE(mapped - before, 65536u / 256) << "the map reported no progress as it went";
    EXPECT_GE(freed - mapped, 65536u / 256) << "the free reported no progress as it went";

    jal_mem_t small = nullptr;
    EXPECT_EQ(jal_mem_alloc(ctx, 2u << 20, JAL_PLACE_SLICE, 1, 0, &small), JAL_STATUS_OK)
        << "the queue still serves: " << jal_last_error_message();
    EXPECT_EQ(jal_mem_free(small), JAL_STATUS_OK);
    uint32_t leaked = 99;
    EXPECT_EQ(jal_context_destroy(ctx, &leaked), JAL_STATUS_OK) << jal_last_error_message();
    EXPECT_EQ(leaked, 0u) << "the library and the device disagree about what is held";
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
