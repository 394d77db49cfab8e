// Contexts, device memory and user queues (admin opcodes 0x10-0x18) against the fake bus
// with a fake MMU and command processor.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <set>

#include "fake_bus.hpp"
#include "fake_mmu_cp.hpp"
#include "firmware/firmware.hpp"
#include "firmware/host/admin_commands.hpp"
#include "firmware/host/admin_resources.hpp"
#include "firmware/host/event_codes.hpp"
#include "firmware/memory/page_allocator.hpp"
#include "jal/hw/pci.h"
#include "jal/hw/queue.h"
#include "jal/hw/regs.h"
#include "jal/hw/status.h"

using namespace jal::fw;
using memory::kPagesPerChannel;
using memory::kPagesPerSlice;

namespace {

constexpr std::uint64_t kData = 0x120000;
constexpr std::uint64_t kPage = JAL_PAGE_SIZE;
constexpr std::uint64_t kRing = 0x140000, kRptr = 0x150008;

struct ResourcesTest : ::testing::Test {
    fake::FakeBus bus;
    fake::FakeMmuCp dev;
    host::EventLog log;
    host::Journal journal{log};
    boot::PostTrail post;
    host::ChipInfo chip;
    slices::SliceManager slices;
    hbm::HbmState hbm;
    power::PowerManager power{slices, journal};
    host::ResourceCommands res{chip, slices, hbm, journal};
    host::AdminCommands commands{host::AdminDeps{chip, slices, hbm, power, log, post}, &res};

    void SetUp() override
    {
        bus.log_writes = false;
        dev.install(bus);
        bus.attach(0);
        bus.attach(1);
        for (auto& ch : hbm.channels) ch.status = JAL_HBM_CH_OK;
    }
    // Harvest (after a test set fuses / failed channels) and bring the resources up.
    void start()
    {
        ASSERT_EQ(slices.release_resets(), JAL_STATUS_OK);
        ASSERT_EQ(slices.run_bist(), JAL_STATUS_OK);
        ASSERT_EQ(slices.harvest(), JAL_STATUS_OK);
        chip.state = JAL_CHIP_STATE_READY;
        res.init();
        res.functions_changed(bus.read32(JAL_HOSTIF_FUNC_PRESENT));
    }

    static jal_admin_sqe sqe(std::uint8_t opcode, std::initializer_list<std::uint32_t> cdw = {},
                             std::uint32_t len = 0)
    {
        jal_admin_sqe s{};
        s.opcode = opcode;
        s.data_addr = len ? kData : 0;
        s.data_len = len;
        std::uint32_t i = 0;
        for (auto v : cdw) s.cdw[i++] = v;
        return s;
    }
    host::Completion run(std::uint32_t fn, const jal_admin_sqe& s)
    {
        return commands.execute(fn, s);
    }

    std::uint32_t create_context(std::uint32_t fn = 0)
    {
        const auto c = run(fn, sqe(JAL_ADMIN_CREATE_CONTEXT));
        EXPECT_EQ(c.status, JAL_STATUS_OK);
        return c.result;
    }
    host::Completion alloc(std::uint32_t fn, std::uint32_t ctx, std::uint64_t bytes,
                           std::uint32_t placement, std::uint64_t mask, std::uint32_t align = 0,
                           std::uint32_t len = sizeof(jal_mem_alloc_reply))
    {
        return run(fn, sqe(JAL_ADMIN_ALLOC_MEMORY,
                           {ctx, static_cast<std::uint32_t>(bytes),
                            static_cast<std::uint32_t>(bytes >> 32), placement,
                            static_cast<std::uint32_t>(mask),
                            static_cast<std::uint32_t>(mask >> 32), align},
                           len));
    }
    jal_mem_alloc_reply alloc_ok(std::uint32_t ctx, std::uint64_t bytes, std::uint32_t placement,
                                 std::uint64_t mask, std::uint32_t align = 0, std::uint32_t fn = 0)
    {
        const auto c = alloc(fn, ctx, bytes, placement, mask, align);
        EXPECT_EQ(c.status, JAL_STATUS_OK);
        EXPECT_EQ(c.result, sizeof(jal_mem_alloc_reply));
        return reply<jal_mem_alloc_reply>(fn);
    }
    template <typename T>
    T reply(std::uint32_t fn = 0, std::uint32_t offset = 0)
    {
        T t;
        std::memcpy(&t, bus.host_ptr(fn, kData + offset), sizeof t);
        return t;
    }
    host::Completion free_mem(std::uint32_t fn, std::uint32_t ctx, std::uint64_t va)
    {
        return run(fn, sqe(JAL_ADMIN_FREE_MEMORY, {ctx, static_cast<std::uint32_t>(va),
                                                   static_cast<std::uint32_t>(va >> 32)}));
    }
    host::Completion placement(std::uint32_t fn, std::uint32_t ctx, std::uint64_t va,
                               std::uint32_t first, std::uint32_t len)
    {
        return run(fn, sqe(JAL_ADMIN_GET_PLACEMENT,
                           {ctx, static_cast<std::uint32_t>(va),
                            static_cast<std::uint32_t>(va >> 32), first},
                           len));
    }
    host::Completion create_queue(std::uint32_t fn, std::uint32_t ctx, std::uint64_t ring = kRing,
                                  std::uint32_t size = 256, std::uint64_t rptr = kRptr,
                                  std::uint32_t vector = 1)
    {
        return run(fn,
                   sqe(JAL_ADMIN_CREATE_QUEUE, {ctx, static_cast<std::uint32_t>(ring),
                                                static_cast<std::uint32_t>(ring >> 32), size,
                                                static_cast<std::uint32_t>(rptr),
                                                static_cast<std::uint32_t>(rptr >> 32), vector}));
    }
    std::uint32_t free_pages() const { return res.memory().pages().free_pages_total(); }
    // Physical slice of a device physical address.
    static std::uint32_t phys_slice(std::uint64_t pa)
    {
        return jal_slice_of_channel(jal_hbm_channel_of(pa));
    }
    bool has_event(std::uint16_t code) const
    {
        for (std::uint32_t s = log.oldest_seq(); s < log.next_seq(); ++s)
            if (log.at(s).code == code) return true;
        return false;
    }
    const jal_log_event* last_event(std::uint16_t code) const
    {
        const jal_log_event* e = nullptr;
        for (std::uint32_t s = log.oldest_seq(); s < log.next_seq(); ++s)
            if (log.at(s).code == code) e = &log.at(s);
        return e;
    }
};

// ---------------------------------------------------------------- contexts

TEST_F(ResourcesTest, InitCleansTheMmuAndEveryQueueEngine)
{
    start();
    EXPECT_EQ(dev.mmu.flushes.size(), JAL_MAX_CONTEXTS - 1u);
    for (auto& q : dev.cp.q) EXPECT_EQ(q.ctrl, std::vector<std::uint32_t>{JAL_CP_CTRL_DISABLE});
    EXPECT_EQ(free_pages(), memory::kTotalPages);
}

TEST_F(ResourcesTest, ContextIdsRunOneToSixtyThreeThenBusy)
{
    start();
    std::set<std::uint32_t> ids;
    for (std::uint32_t i = 0; i < JAL_MAX_CONTEXTS - 1; ++i) ids.insert(create_context(i % 2));
    EXPECT_EQ(ids.size(), JAL_MAX_CONTEXTS - 1u);
    EXPECT_EQ(*ids.begin(), 1u);
    EXPECT_EQ(*ids.rbegin(), JAL_MAX_CONTEXTS - 1u);
    EXPECT_EQ(run(0, sqe(JAL_ADMIN_CREATE_CONTEXT)).status, JAL_STATUS_BUSY);
    EXPECT_EQ(run(0, sqe(JAL_ADMIN_DESTROY_CONTEXT, {8})).status, JAL_STATUS_PERMISSION);  // fn 1's
    EXPECT_EQ(run(1, sqe(JAL_ADMIN_DESTROY_CONTEXT, {8})).status, JAL_STATUS_OK);
    EXPECT_EQ(create_context(0), 8u);
    EXPECT_TRUE(has_event(host::kEvContextCreated));
}

TEST_F(ResourcesTest, IdsRotateSoADestroyedIdIsNotReusedAtOnce)
{
    start();
    const auto a = create_context();
    EXPECT_EQ(run(0, sqe(JAL_ADMIN_DESTROY_CONTEXT, {a})).status, JAL_STATUS_OK);
    EXPECT_NE(create_context(), a);
}

TEST_F(ResourcesTest, DestroyContextValidatesAndReportsWhatItStillHeld)
{
    start();
    for (std::uint32_t bad : {0u, 5u, 64u, 0xffffffffu})
        EXPECT_EQ(run(0, sqe(JAL_ADMIN_DESTROY_CONTEXT, {bad})).status, JAL_STATUS_INVALID_FIELD)
            << bad;
    const auto ctx = create_context();
    const auto before = free_pages();
    alloc_ok(ctx, 3 * kPage, JAL_PLACE_SLICE, 1);
    alloc_ok(ctx, kPage, JAL_PLACE_REPLICATED, 0b110);
    ASSERT_EQ(create_queue(0, ctx).status, JAL_STATUS_OK);
    const auto c = run(0, sqe(JAL_ADMIN_DESTROY_CONTEXT, {ctx}));
    EXPECT_EQ(c.status, JAL_STATUS_OK);
    EXPECT_EQ(c.result, 3u);  // two allocations and a queue
    EXPECT_EQ(free_pages(), before);
    EXPECT_EQ(dev.mmu.mapped_pages(ctx), 0u);
    EXPECT_EQ(dev.mmu.flushes.back(), ctx);
    EXPECT_EQ(res.queues().live(), 0u);
    const auto* e = last_event(host::kEvContextDestroyed);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->args[1], ctx);
    EXPECT_EQ(e->args[2], 2u);
    EXPECT_EQ(e->args[3], 1u);
    EXPECT_EQ(run(0, sqe(JAL_ADMIN_DESTROY_CONTEXT, {ctx})).status, JAL_STATUS_INVALID_FIELD);
}

TEST_F(ResourcesTest, EachFunctionsContextCountIsPublishedForTheClientList)
{
    start();
    auto published = [&](std::uint32_t fn) {
        return bus.read32(JAL_HOSTIF_FN(fn, JAL_FN_CONTEXTS));
    };
    const auto a = create_context(0);
    create_context(0);
    create_context(1);
    EXPECT_EQ(published(0), 2u);
    EXPECT_EQ(published(1), 1u);
    EXPECT_EQ(run(0, sqe(JAL_ADMIN_DESTROY_CONTEXT, {a})).status, JAL_STATUS_OK);
    EXPECT_EQ(published(0), 1u);
    bus.detach(1);
    res.functions_changed(bus.read32(JAL_HOSTIF_FUNC_PRESENT));
    EXPECT_EQ(published(1), 0u);
    EXPECT_EQ(published(0), 1u);
}

TEST_F(ResourcesTest, CommandsWaitForAReadyChip)
{
    chip.state = JAL_CHIP_STATE_BOOTING;
    EXPECT_EQ(run(0, sqe(JAL_ADMIN_CREATE_CONTEXT)).status, JAL_STATUS_NOT_READY);
    chip.state = JAL_CHIP_STATE_FAILED;
    EXPECT_EQ(run(0, sqe(JAL_ADMIN_CREATE_CONTEXT)).status, JAL_STATUS_NOT_READY);
}

TEST_F(ResourcesTest, WithoutTheResourceHandlerTheCommandsAreUnsupported)
{
    host::AdminCommands bare{host::AdminDeps{chip, slices, hbm, power, log, post}};
    EXPECT_EQ(bare.execute(0, sqe(JAL_ADMIN_CREATE_CONTEXT)).status, JAL_STATUS_UNSUPPORTED);
    EXPECT_EQ(bare.execute(0, sqe(JAL_ADMIN_HOST_WINDOW)).status, JAL_STATUS_UNSUPPORTED);
    EXPECT_EQ(bare.execute(0, sqe(0x1d)).status, JAL_STATUS_INVALID_OPCODE);
}

// ---------------------------------------------------------------- placement

TEST_F(ResourcesTest, SlicePlacementPutsEveryPageOnTheSlice)
{
    start();
    const auto ctx = create_context();
    const auto r = alloc_ok(ctx, 2 * kPage + 1, JAL_PLACE_SLICE, 1ull << 5);
    EXPECT_EQ(r.va, JAL_VA_BASE);
    EXPECT_EQ(r.size, 3 * kPage);
    EXPECT_EQ(r.pages, 3u);
    EXPECT_EQ(r.replicas, 1u);
    EXPECT_EQ(r.page_size, JAL_PAGE_SIZE);
    EXPECT_EQ(r.placement, static_cast<std::uint32_t>(JAL_PLACE_SLICE));
    EXPECT_EQ(r.slice_mask, 1ull << 5);
    EXPECT_EQ(free_pages(), memory::kTotalPages - 3);
    for (std::uint32_t i = 0; i < 3; ++i) {
        const auto* reps = dev.mmu.replicas(ctx, r.va + i * kPage);
        ASSERT_NE(reps, nullptr);
        ASSERT_EQ(reps->size(), 1u);
        EXPECT_EQ(phys_slice((*reps)[0]), 5u);
    }
    const auto c = placement(0, ctx, r.va, 0, 4096);
    EXPECT_EQ(c.status, JAL_STATUS_OK);
    EXPECT_EQ(c.result, sizeof(jal_placement_header) + 3 * sizeof(jal_page_placement));
    const auto h = reply<jal_placement_header>();
    EXPECT_EQ(h.va, r.va);
    EXPECT_EQ(h.count, 3u);
    EXPECT_EQ(h.pages, 3u);
    EXPECT_EQ(h.replicas, 1u);
    std::set<std::uint64_t> phys;
    for (std::uint32_t i = 0; i < 3; ++i) {
        const auto p = reply<jal_page_placement>(0, 32 + 16 * i);
        EXPECT_EQ(p.slice, 5u);
        EXPECT_EQ(p.replica, 0u);
        EXPECT_EQ(p.phys % kPage, 0u);
        EXPECT_EQ(p.channel_lo, jal_hbm_channel_of(p.phys));
        EXPECT_GE(p.channel_lo, 15u);
        EXPECT_LE(p.channel_lo, 17u);
        phys.insert(p.phys);
    }
    EXPECT_EQ(phys.size(), 3u);
}

TEST_F(ResourcesTest, InterleavedPageIGoesToTheIthSliceOfTheMaskInOrder)
{
    start();
    const auto ctx = create_context();
    const std::uint64_t mask = 1ull << 1 | 1ull << 3 | 1ull << 40;
    const auto r = alloc_ok(ctx, 7 * kPage, JAL_PLACE_INTERLEAVED, mask);
    EXPECT_EQ(r.replicas, 1u);
    const std::uint32_t order[3] = {1, 3, 40};
    for (std::uint32_t i = 0; i < 7; ++i) {
        const auto* reps = dev.mmu.replicas(ctx, r.va + i * kPage);
        ASSERT_NE(reps, nullptr);
        EXPECT_EQ(phys_slice((*reps)[0]), order[i % 3]) << "page " << i;
    }
    EXPECT_EQ(placement(0, ctx, r.va, 4, 4096).status, JAL_STATUS_OK);
    const auto h = reply<jal_placement_header>();
    EXPECT_EQ(h.first_page, 4u);
    EXPECT_EQ(h.count, 3u);
    for (std::uint32_t i = 0; i < 3; ++i)
        EXPECT_EQ(reply<jal_page_placement>(0, 32 + 16 * i).slice, order[(4 + i) % 3]);
}

TEST_F(ResourcesTest, ReplicatedPagesHaveACopyOnEverySlice)
{
    start();
    const auto ctx = create_context();
    std::vector<std::uint32_t> flags_at_map;
    std::uint32_t flags = 0;
    bus.write_hook = [&, inner = bus.write_hook](std::uint32_t addr, std::uint32_t v) {
        inner(addr, v);
        if (addr == JAL_MMU_FLAGS) flags = v;
        if (addr == JAL_MMU_CMD && v == JAL_MMU_CMD_MAP) flags_at_map.push_back(flags);
    };
    const auto r =
        alloc_ok(ctx, 2 * kPage, JAL_PLACE_REPLICATED, 1ull << 0 | 1ull << 2 | 1ull << 63);
    EXPECT_EQ(r.replicas, 3u);
    EXPECT_EQ(r.pages, 2u);
    EXPECT_EQ(free_pages(), memory::kTotalPages - 6);
    EXPECT_EQ(flags_at_map,
              (std::vector<std::uint32_t>{0, JAL_MMU_F_ADD_REPLICA, JAL_MMU_F_ADD_REPLICA, 0,
                                          JAL_MMU_F_ADD_REPLICA, JAL_MMU_F_ADD_REPLICA}));
    for (std::uint32_t i = 0; i < 2; ++i) {
        const auto* reps = dev.mmu.replicas(ctx, r.va + i * kPage);
        ASSERT_NE(reps, nullptr);
        ASSERT_EQ(reps->size(), 3u);
        EXPECT_EQ(phys_slice((*reps)[0]), 0u);
        EXPECT_EQ(phys_slice((*reps)[1]), 2u);
        EXPECT_EQ(phys_slice((*reps)[2]), 63u);
    }
    // Page-major entries; a buffer for 4 entries cuts the second page short.
    const auto c = placement(0, ctx, r.va, 0, 32 + 4 * 16);
    EXPECT_EQ(c.status, JAL_STATUS_OK);
    EXPECT_EQ(c.result, 32u + 4 * 16);
    const auto h = reply<jal_placement_header>();
    EXPECT_EQ(h.count, 4u);
    EXPECT_EQ(h.replicas, 3u);
    const std::uint8_t slices_expected[4] = {0, 2, 63, 0}, replica_expected[4] = {0, 1, 2, 0};
    for (std::uint32_t i = 0; i < 4; ++i) {
        const auto p = reply<jal_page_placement>(0, 32 + 16 * i);
        EXPECT_EQ(p.slice, slices_expected[i]);
        EXPECT_EQ(p.replica, replica_expected[i]);
        EXPECT_EQ(p.phys, (*dev.mmu.replicas(ctx, r.va + (i / 3) * kPage))[i % 3]);
    }
}

TEST_F(ResourcesTest, AlignmentIsHonouredAndAddressesDoNotOverlap)
{
    start();
    const auto ctx = create_context();
    const auto a = alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1);
    const auto b = alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1, 30);
    EXPECT_EQ(b.va % (1ull << 30), 0u);
    EXPECT_GT(b.va, a.va + a.size);  // a guard page at least
    const auto c = alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1, 21);
    EXPECT_GT(c.va, b.va);
    EXPECT_EQ(c.va % kPage, 0u);
    const auto d = alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1, 40);
    EXPECT_EQ(d.va % (1ull << 40), 0u);
    EXPECT_GT(d.va, c.va);
    for (std::uint32_t bad : {1u, 20u, 41u, 64u})
        EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_SLICE, 1, bad).status, JAL_STATUS_INVALID_FIELD)
            << bad;
    // Each context has its own address space.
    const auto other = create_context();
    EXPECT_EQ(alloc_ok(other, kPage, JAL_PLACE_SLICE, 1).va, JAL_VA_BASE);
}

// ---------------------------------------------------------------- exhaustion, harvesting

TEST_F(ResourcesTest, ExhaustedSliceIsNoMemoryAndLeavesNothingBehind)
{
    start();
    const auto ctx = create_context();
    const auto full = alloc_ok(ctx, kPagesPerSlice * kPage, JAL_PLACE_SLICE, 1ull << 2);
    EXPECT_EQ(full.pages, kPagesPerSlice);
    EXPECT_EQ(res.memory().pages().free_pages(2), 0u);
    const auto free_before = free_pages();
    const auto maps_before = dev.mmu.maps.size();
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_SLICE, 1ull << 2).status, JAL_STATUS_NO_MEMORY);
    // Interleaved and replicated need every slice's share up front.
    EXPECT_EQ(alloc(0, ctx, 4 * kPage, JAL_PLACE_INTERLEAVED, 0b0111).status, JAL_STATUS_NO_MEMORY);
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_REPLICATED, 0b0110).status, JAL_STATUS_NO_MEMORY);
    // One page fits the interleave if it lands on slice 0 only.
    EXPECT_EQ(free_pages(), free_before);
    EXPECT_EQ(dev.mmu.maps.size(), maps_before);
    // Bigger than the whole chip, or absurd sizes.
    EXPECT_EQ(
        alloc(0, ctx, std::uint64_t{memory::kTotalPages + 1} * kPage, JAL_PLACE_INTERLEAVED, ~0ull)
            .status,
        JAL_STATUS_NO_MEMORY);
    EXPECT_EQ(alloc(0, ctx, ~0ull, JAL_PLACE_INTERLEAVED, ~0ull).status, JAL_STATUS_NO_MEMORY);
    EXPECT_EQ(free_pages(), free_before);
    // Freeing makes the slice usable again.
    EXPECT_EQ(free_mem(0, ctx, full.va).status, JAL_STATUS_OK);
    EXPECT_EQ(res.memory().pages().free_pages(2), kPagesPerSlice);
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_SLICE, 1ull << 2).status, JAL_STATUS_OK);
}

TEST_F(ResourcesTest, AllocationTableFullIsNoMemory)
{
    start();
    const auto ctx = create_context();
    for (std::uint32_t i = 0; i < JAL_MAX_ALLOCATIONS; ++i)
        ASSERT_EQ(alloc(0, ctx, kPage, JAL_PLACE_SLICE, 1ull << (i % 64)).status, JAL_STATUS_OK)
            << i;
    EXPECT_EQ(res.memory().live_allocations(), JAL_MAX_ALLOCATIONS);
    const auto free_before = free_pages();
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_SLICE, 1).status, JAL_STATUS_NO_MEMORY);
    EXPECT_EQ(free_pages(), free_before);
    const auto c = run(0, sqe(JAL_ADMIN_DESTROY_CONTEXT, {ctx}));
    EXPECT_EQ(c.result, JAL_MAX_ALLOCATIONS);
    EXPECT_EQ(free_pages(), memory::kTotalPages);
}

TEST_F(ResourcesTest, HarvestedSlicesVanishFromTheLogicalNumbering)
{
    bus.slices.fused = 1ull << 2 | 1ull << 10;
    start();
    ASSERT_EQ(slices.enabled_count(), 62u);
    const auto ctx = create_context();
    // Logical 2 is physical 3; logical 9 is physical 11.
    const auto r = alloc_ok(ctx, 2 * kPage, JAL_PLACE_INTERLEAVED, 1ull << 2 | 1ull << 9);
    EXPECT_EQ(phys_slice((*dev.mmu.replicas(ctx, r.va))[0]), 3u);
    EXPECT_EQ(phys_slice((*dev.mmu.replicas(ctx, r.va + kPage))[0]), 11u);
    EXPECT_EQ(placement(0, ctx, r.va, 0, 4096).status, JAL_STATUS_OK);
    EXPECT_EQ(reply<jal_page_placement>(0, 32).slice, 2u);
    EXPECT_EQ(reply<jal_page_placement>(0, 48).slice, 9u);
    // Only logical slices 0..61 exist.
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_SLICE, 1ull << 62).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_INTERLEAVED, 0b1 | 1ull << 63).status,
              JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_SLICE, 1ull << 61).status, JAL_STATUS_OK);
    EXPECT_EQ(res.memory().pages().capacity(2), 0u);
    EXPECT_EQ(res.memory().pages().capacity(10), 0u);
    EXPECT_EQ(free_pages(), 62 * kPagesPerSlice - 3);
}

TEST_F(ResourcesTest, FailedChannelsGiveNoPages)
{
    hbm.channels[1].status = JAL_HBM_CH_FAILED;     // slice 0, middle channel
    hbm.channels[5].status = JAL_HBM_CH_UNTRAINED;  // slice 1, last channel
    hbm.channels[6].status = JAL_HBM_CH_REPAIRED;   // slice 2: still in service
    start();
    EXPECT_EQ(res.memory().pages().capacity(0), 2 * kPagesPerChannel);
    EXPECT_EQ(res.memory().pages().capacity(1), 2 * kPagesPerChannel);
    EXPECT_EQ(res.memory().pages().capacity(2), kPagesPerSlice);
    const auto ctx = create_context();
    EXPECT_EQ(alloc(0, ctx, (2 * kPagesPerChannel + 1) * kPage, JAL_PLACE_SLICE, 1).status,
              JAL_STATUS_NO_MEMORY);
    const auto r = alloc_ok(ctx, 2 * kPagesPerChannel * kPage, JAL_PLACE_SLICE, 1);
    std::set<std::uint32_t> channels;
    for (std::uint32_t i = 0; i < r.pages; ++i)
        channels.insert(jal_hbm_channel_of((*dev.mmu.replicas(ctx, r.va + i * kPage))[0]));
    EXPECT_EQ(channels, (std::set<std::uint32_t>{0, 2}));
}

TEST_F(ResourcesTest, FreedPagesAreReused)
{
    start();
    const auto ctx = create_context();
    const auto a = alloc_ok(ctx, 2 * kPage, JAL_PLACE_SLICE, 1ull << 7);
    const auto pa0 = (*dev.mmu.replicas(ctx, a.va))[0];
    EXPECT_EQ(free_mem(0, ctx, a.va).status, JAL_STATUS_OK);
    EXPECT_EQ(dev.mmu.mapped_pages(ctx), 0u);
    EXPECT_EQ(free_pages(), memory::kTotalPages);
    const auto b = alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1ull << 7);
    EXPECT_NE(b.va, a.va);  // addresses are not reused
    EXPECT_EQ((*dev.mmu.replicas(ctx, b.va))[0], pa0);
    // Unknown, inner, misaligned, already freed or another context's addresses.
    EXPECT_EQ(free_mem(0, ctx, a.va).status, JAL_STATUS_INVALID_FIELD);
    const auto c = alloc_ok(ctx, 2 * kPage, JAL_PLACE_SLICE, 1);
    EXPECT_EQ(free_mem(0, ctx, c.va + kPage).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(free_mem(0, ctx, c.va + 4096).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(free_mem(0, ctx, 0).status, JAL_STATUS_INVALID_FIELD);
    const auto other = create_context();
    EXPECT_EQ(free_mem(0, other, c.va).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(free_mem(0, 0, c.va).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(free_mem(0, ctx, c.va).status, JAL_STATUS_OK);
}

TEST_F(ResourcesTest, FreedPagesAreScrubbedAfterUnmappingAndBeforeReuse)
{
    start();
    const auto ctx = create_context();
    const auto a = alloc_ok(ctx, 2 * kPage, JAL_PLACE_REPLICATED, 1ull << 3 | 1ull << 9);
    std::set<std::uint64_t> held;
    for (std::uint32_t i = 0; i < 2; ++i)
        for (std::uint64_t pa : *dev.mmu.replicas(ctx, a.va + i * kPage)) held.insert(pa);
    ASSERT_EQ(held.size(), 4u);
    EXPECT_EQ(free_mem(0, ctx, a.va).status, JAL_STATUS_OK);
    EXPECT_EQ(std::set<std::uint64_t>(dev.mmu.scrubbed.begin(), dev.mmu.scrubbed.end()), held)
        << "every replica of every page is scrubbed";
    EXPECT_EQ(dev.mmu.scrubbed.size(), 4u);
    EXPECT_EQ(dev.mmu.scrubbed_while_mapped, 0u) << "scrubbed only once nothing maps it";
    // A context destroyed while holding memory scrubs it too (a client that exits).
    const auto b = alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1ull << 5);
    const auto pb = (*dev.mmu.replicas(ctx, b.va))[0];
    EXPECT_EQ(run(0, sqe(JAL_ADMIN_DESTROY_CONTEXT, {ctx})).status, JAL_STATUS_OK);
    ASSERT_EQ(dev.mmu.scrubbed.size(), 5u);
    EXPECT_EQ(dev.mmu.scrubbed.back(), pb);
    EXPECT_EQ(free_pages(), memory::kTotalPages);
}

TEST_F(ResourcesTest, APageThatCannotBeScrubbedIsNeverHandedOut)
{
    start();
    const auto ctx = create_context();
    const auto a = alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1ull << 4);
    dev.mmu.fail_scrub = true;
    EXPECT_EQ(free_mem(0, ctx, a.va).status, JAL_STATUS_OK);
    EXPECT_EQ(free_pages(), memory::kTotalPages - 1) << "the page stays out of service";
    EXPECT_TRUE(has_event(host::kEvMmuError));
    EXPECT_EQ(last_event(host::kEvMmuError)->args[0], std::uint32_t{JAL_MMU_CMD_SCRUB});
}

TEST_F(ResourcesTest, MemoryLimitCountsEveryContextAndReplicaOfTheFunction)
{
    start();
    bus.regs[JAL_HOSTIF_FN_MEM_LIMIT] = 5;  // pages per function
    const auto a = create_context(0), b = create_context(0), other = create_context(1);
    const auto r = alloc_ok(a, 2 * kPage, JAL_PLACE_REPLICATED, 0b11);  // 4 pages
    EXPECT_EQ(alloc(0, b, 2 * kPage, JAL_PLACE_SLICE, 1).status, JAL_STATUS_NO_MEMORY)
        << "the limit is the function's, over all its contexts";
    (void)alloc_ok(b, kPage, JAL_PLACE_SLICE, 1);  // the fifth
    EXPECT_EQ(alloc(0, b, kPage, JAL_PLACE_SLICE, 1).status, JAL_STATUS_NO_MEMORY);
    (void)alloc_ok(other, 5 * kPage, JAL_PLACE_INTERLEAVED, 0b111, 0, 1);  // its own share
    EXPECT_EQ(free_mem(0, a, r.va).status, JAL_STATUS_OK);
    (void)alloc_ok(a, 4 * kPage, JAL_PLACE_SLICE, 2);  // freeing gives the share back
}

TEST_F(ResourcesTest, MmuFailureMidAllocationRollsBack)
{
    start();
    const auto ctx = create_context();
    const auto maps_before = dev.mmu.maps.size();
    dev.mmu.fail_map_after = 4;  // the fifth MAP fails: page 1, replica 1
    EXPECT_EQ(alloc(0, ctx, 3 * kPage, JAL_PLACE_REPLICATED, 0b111).status, JAL_STATUS_INTERNAL);
    EXPECT_EQ(free_pages(), memory::kTotalPages);
    EXPECT_EQ(dev.mmu.maps.size(), maps_before);
    EXPECT_EQ(res.memory().live_allocations(), 0u);
    EXPECT_TRUE(has_event(host::kEvMmuError));
    EXPECT_EQ(alloc(0, ctx, 3 * kPage, JAL_PLACE_REPLICATED, 0b111).status, JAL_STATUS_OK);
}

TEST_F(ResourcesTest, UndeliverableAllocReplyFreesTheAllocation)
{
    start();
    const auto ctx = create_context();
    auto s = sqe(JAL_ADMIN_ALLOC_MEMORY,
                 {ctx, static_cast<std::uint32_t>(kPage), 0, JAL_PLACE_SLICE, 1, 0, 0}, 64);
    s.data_addr = 0x10;  // not mapped
    EXPECT_EQ(run(0, s).status, JAL_STATUS_DMA_FAULT);
    EXPECT_EQ(free_pages(), memory::kTotalPages);
    EXPECT_EQ(res.memory().live_allocations(), 0u);
    EXPECT_EQ(dev.mmu.mapped_pages(ctx), 0u);
}

// ---------------------------------------------------------------- validation

TEST_F(ResourcesTest, AllocMemoryValidation)
{
    start();
    const auto ctx = create_context();
    const auto theirs = create_context(1);
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_SLICE, 1, 0, sizeof(jal_mem_alloc_reply) - 1).status,
              JAL_STATUS_INVALID_LENGTH);
    EXPECT_EQ(alloc(0, 0, kPage, JAL_PLACE_SLICE, 1).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(alloc(0, 63, kPage, JAL_PLACE_SLICE, 1).status,
              JAL_STATUS_INVALID_FIELD);  // not created
    EXPECT_EQ(alloc(0, 64, kPage, JAL_PLACE_SLICE, 1).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(alloc(0, theirs, kPage, JAL_PLACE_SLICE, 1).status, JAL_STATUS_PERMISSION);
    EXPECT_EQ(alloc(0, ctx, 0, JAL_PLACE_SLICE, 1).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(alloc(0, ctx, kPage, 0, 1).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(alloc(0, ctx, kPage, 4, 1).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_SLICE, 0).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_SLICE, 0b11).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_INTERLEAVED, 0).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_REPLICATED, 0).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(alloc(0, ctx, kPage, JAL_PLACE_SLICE, 1, 20).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(free_pages(), memory::kTotalPages);
    EXPECT_EQ(res.memory().live_allocations(), 0u);
}

TEST_F(ResourcesTest, FreeAndPlacementValidation)
{
    start();
    const auto ctx = create_context();
    const auto theirs = create_context(1);
    const auto r = alloc_ok(ctx, 2 * kPage, JAL_PLACE_SLICE, 1);
    EXPECT_EQ(free_mem(0, theirs, r.va).status, JAL_STATUS_PERMISSION);
    EXPECT_EQ(free_mem(0, 64, r.va).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(placement(0, ctx, r.va, 0, 31).status, JAL_STATUS_INVALID_LENGTH);
    EXPECT_EQ(placement(0, theirs, r.va, 0, 64).status, JAL_STATUS_PERMISSION);
    EXPECT_EQ(placement(0, 0, r.va, 0, 64).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(placement(0, ctx, r.va + 8 * kPage, 0, 64).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(placement(0, ctx, JAL_VA_BASE - kPage, 0, 64).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(placement(0, ctx, r.va, 2, 64).status, JAL_STATUS_OUT_OF_RANGE);
    // An address inside the allocation names it; a header-only buffer gets no entries.
    const auto c = placement(0, ctx, r.va + kPage + 100, 1, 32);
    EXPECT_EQ(c.status, JAL_STATUS_OK);
    EXPECT_EQ(c.result, 32u);
    EXPECT_EQ(reply<jal_placement_header>().va, r.va);
    EXPECT_EQ(reply<jal_placement_header>().count, 0u);
}

// ---------------------------------------------------------------- queues

TEST_F(ResourcesTest, CreateQueueProgramsTheEngine)
{
    start();
    const auto ctx = create_context(1);
    const std::uint64_t ring = 0x1234'5678'9abc'de40ull, rptr = 0x0000'0001'0000'0008ull;
    const auto c = create_queue(1, ctx, ring, 1024, rptr, 15);
    ASSERT_EQ(c.status, JAL_STATUS_OK);
    const auto qid = c.result;
    ASSERT_LT(qid, JAL_MAX_USER_QUEUES);
    const auto& q = dev.cp.q[qid];
    EXPECT_EQ(q.ctx, ctx);
    EXPECT_EQ(q.func, 1u);
    EXPECT_EQ(std::uint64_t{q.ring_hi} << 32 | q.ring_lo, ring);
    EXPECT_EQ(q.size, 1024u);
    EXPECT_EQ(std::uint64_t{q.rptr_hi} << 32 | q.rptr_lo, rptr);
    EXPECT_EQ(q.vector, 15u);
    EXPECT_EQ(q.ctrl.back(), static_cast<std::uint32_t>(JAL_CP_CTRL_ENABLE));
    EXPECT_EQ(q.state, static_cast<std::uint32_t>(JAL_QUEUE_ACTIVE));
    // The enable comes after the description.
    std::vector<std::uint32_t> order;
    bus.log_writes = true;
    bus.writes.clear();
    const auto qid2 = create_queue(1, ctx).result;
    for (auto& [a, v] : bus.writes) order.push_back(a);
    EXPECT_EQ(order, (std::vector<std::uint32_t>{JAL_CP_QSEL, JAL_CP_Q_CTX, JAL_CP_Q_FUNC,
                                                 JAL_CP_Q_RING_LO, JAL_CP_Q_RING_HI, JAL_CP_Q_SIZE,
                                                 JAL_CP_Q_RPTR_LO, JAL_CP_Q_RPTR_HI,
                                                 JAL_CP_Q_VECTOR, JAL_CP_Q_SPACE, JAL_CP_Q_CTRL}));
    EXPECT_EQ(bus.writes.front().second, qid2);
    EXPECT_NE(qid2, qid);
}

TEST_F(ResourcesTest, CreateQueueValidation)
{
    start();
    const auto ctx = create_context();
    const auto theirs = create_context(1);
    EXPECT_EQ(create_queue(0, 0).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(create_queue(0, 64).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(create_queue(0, 40).status, JAL_STATUS_INVALID_FIELD);  // no such context
    EXPECT_EQ(create_queue(0, theirs).status, JAL_STATUS_PERMISSION);
    EXPECT_EQ(create_queue(0, ctx, 0).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(create_queue(0, ctx, kRing + 32).status, JAL_STATUS_INVALID_FIELD);
    for (std::uint32_t size : {0u, 8u, 100u, 131072u, 0x80000000u})
        EXPECT_EQ(create_queue(0, ctx, kRing, size).status, JAL_STATUS_INVALID_FIELD) << size;
    EXPECT_EQ(create_queue(0, ctx, kRing, 256, 0).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(create_queue(0, ctx, kRing, 256, kRptr + 4).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(create_queue(0, ctx, kRing, 256, kRptr, JAL_MSIX_VECTORS).status,
              JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(res.queues().live(), 0u);
    EXPECT_EQ(create_queue(0, ctx, kRing, JAL_QUEUE_SIZE_MIN).status, JAL_STATUS_OK);
    EXPECT_EQ(create_queue(0, ctx, kRing, JAL_QUEUE_SIZE_MAX, kRptr, 0).status, JAL_STATUS_OK);
}

TEST_F(ResourcesTest, QueueStatusResetAndDestroy)
{
    start();
    const auto ctx = create_context();
    const auto qid = create_queue(0, ctx).result;
    auto& q = dev.cp.q[qid];
    q.read_index = 0x1'0000'0005ull;
    q.write_index = 0x1'0000'0009ull;
    q.errors = 2;
    q.last_error = JAL_STATUS_PAGE_FAULT;
    q.err_index = 0x1'0000'0003ull;
    auto status = [&](std::uint32_t fn, std::uint32_t id, std::uint32_t len = 64) {
        return run(fn, sqe(JAL_ADMIN_QUEUE_STATUS, {id}, len));
    };
    const auto c = status(0, qid);
    ASSERT_EQ(c.status, JAL_STATUS_OK);
    EXPECT_EQ(c.result, sizeof(jal_queue_status));
    const auto st = reply<jal_queue_status>();
    EXPECT_EQ(st.queue_id, qid);
    EXPECT_EQ(st.state, static_cast<std::uint32_t>(JAL_QUEUE_ACTIVE));
    EXPECT_EQ(st.context, ctx);
    EXPECT_EQ(st.size, 256u);
    EXPECT_EQ(st.read_index, 0x1'0000'0005ull);
    EXPECT_EQ(st.write_index, 0x1'0000'0009ull);
    EXPECT_EQ(st.errors, 2u);
    EXPECT_EQ(st.last_error, static_cast<std::uint32_t>(JAL_STATUS_PAGE_FAULT));
    EXPECT_EQ(st.last_error_index, 0x1'0000'0003ull);
    // The errors are logged once, not at every status read.
    const auto logged = [&] {
        std::uint32_t n = 0;
        for (std::uint32_t s = log.oldest_seq(); s < log.next_seq(); ++s)
            n += log.at(s).code == host::kEvUserQueueError;
        return n;
    };
    EXPECT_EQ(logged(), 1u);
    EXPECT_EQ(status(0, qid).status, JAL_STATUS_OK);
    EXPECT_EQ(logged(), 1u);
    q.state = JAL_QUEUE_ERROR;
    EXPECT_EQ(status(0, qid).status, JAL_STATUS_OK);
    EXPECT_EQ(logged(), 2u);
    EXPECT_EQ(reply<jal_queue_status>().state, static_cast<std::uint32_t>(JAL_QUEUE_ERROR));

    EXPECT_EQ(status(0, qid, 63).status, JAL_STATUS_INVALID_LENGTH);
    EXPECT_EQ(status(1, qid).status, JAL_STATUS_PERMISSION);
    EXPECT_EQ(run(1, sqe(JAL_ADMIN_RESET_QUEUE, {qid})).status, JAL_STATUS_PERMISSION);
    EXPECT_EQ(run(1, sqe(JAL_ADMIN_DESTROY_QUEUE, {qid})).status, JAL_STATUS_PERMISSION);
    for (std::uint32_t bad :
         {qid + 1, static_cast<std::uint32_t>(JAL_MAX_USER_QUEUES), 0xffffffffu}) {
        EXPECT_EQ(status(0, bad).status, JAL_STATUS_INVALID_FIELD);
        EXPECT_EQ(run(0, sqe(JAL_ADMIN_RESET_QUEUE, {bad})).status, JAL_STATUS_INVALID_FIELD);
        EXPECT_EQ(run(0, sqe(JAL_ADMIN_DESTROY_QUEUE, {bad})).status, JAL_STATUS_INVALID_FIELD);
    }

    EXPECT_EQ(run(0, sqe(JAL_ADMIN_RESET_QUEUE, {qid})).status, JAL_STATUS_OK);
    EXPECT_EQ(q.ctrl.back(), static_cast<std::uint32_t>(JAL_CP_CTRL_RESET));
    EXPECT_EQ(status(0, qid).status, JAL_STATUS_OK);
    EXPECT_EQ(reply<jal_queue_status>().errors, 0u);
    EXPECT_EQ(reply<jal_queue_status>().state, static_cast<std::uint32_t>(JAL_QUEUE_ACTIVE));
    EXPECT_EQ(logged(), 2u);

    EXPECT_EQ(run(0, sqe(JAL_ADMIN_DESTROY_QUEUE, {qid})).status, JAL_STATUS_OK);
    EXPECT_EQ(q.ctrl.back(), static_cast<std::uint32_t>(JAL_CP_CTRL_DISABLE));
    EXPECT_EQ(q.state, static_cast<std::uint32_t>(JAL_QUEUE_DISABLED));
    EXPECT_EQ(run(0, sqe(JAL_ADMIN_DESTROY_QUEUE, {qid})).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(res.queues().live(), 0u);
}

TEST_F(ResourcesTest, QueueIdsExhaustedIsBusy)
{
    start();
    const auto ctx = create_context();
    std::set<std::uint32_t> ids;
    for (std::uint32_t i = 0; i < JAL_MAX_USER_QUEUES; ++i) {
        const auto c = create_queue(0, ctx);
        ASSERT_EQ(c.status, JAL_STATUS_OK);
        ids.insert(c.result);
    }
    EXPECT_EQ(ids.size(), JAL_MAX_USER_QUEUES);
    EXPECT_EQ(create_queue(0, ctx).status, JAL_STATUS_BUSY);
    EXPECT_EQ(run(0, sqe(JAL_ADMIN_DESTROY_QUEUE, {17})).status, JAL_STATUS_OK);
    const auto again = create_queue(0, ctx);
    EXPECT_EQ(again.status, JAL_STATUS_OK);
    EXPECT_EQ(again.result, 17u);
}

// ---------------------------------------------------------------- host windows (1.11)

TEST_F(ResourcesTest, AContextsHostSpaceGoesToEachOfItsQueuesEngines)
{
    start();
    const auto spaced = run(1, sqe(JAL_ADMIN_CREATE_CONTEXT, {77})).result;
    const auto plain = create_context(1);
    const auto q1 = create_queue(1, spaced).result;
    const auto q2 = create_queue(1, plain).result;
    EXPECT_EQ(dev.cp.q[q1].space, 77u);
    EXPECT_EQ(dev.cp.q[q2].space, 0u);
    const auto* e = last_event(host::kEvContextCreated);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->args[2], 0u);  // the plain one, created last
    // A context id used again starts without the old context's space.
    EXPECT_EQ(run(1, sqe(JAL_ADMIN_DESTROY_CONTEXT, {spaced})).status, JAL_STATUS_OK);
    for (std::uint32_t i = 0; i < JAL_MAX_CONTEXTS; ++i) {
        const auto c = run(1, sqe(JAL_ADMIN_CREATE_CONTEXT));
        if (c.status != JAL_STATUS_OK || c.result == spaced) break;
    }
    EXPECT_EQ(dev.cp.q[create_queue(1, spaced).result].space, 0u);
}

TEST_F(ResourcesTest, HostWindowCommandsReachTheCommandProcessorForTheCallersFunction)
{
    start();
    dev.cp.window_cmds.clear();
    const std::uint64_t base = 0x1'2345'6000ull, size = 0x2'0000'0000ull;
    auto window = [&](std::uint32_t fn, std::uint32_t op, std::uint32_t space, std::uint64_t b,
                      std::uint64_t n) {
        return run(
            fn, sqe(JAL_ADMIN_HOST_WINDOW,
                    {op, space, static_cast<std::uint32_t>(b), static_cast<std::uint32_t>(b >> 32),
                     static_cast<std::uint32_t>(n), static_cast<std::uint32_t>(n >> 32)}));
    };
    EXPECT_EQ(window(2, JAL_WINDOW_ADD, 9, base, size).status, JAL_STATUS_OK);
    EXPECT_EQ(window(2, JAL_WINDOW_REMOVE, 9, base, size).status, JAL_STATUS_OK);
    EXPECT_EQ(window(1, JAL_WINDOW_CLEAR, 9, 0, 0).status, JAL_STATUS_OK);
    dev.cp.window_status = JAL_STATUS_BUSY;  // the table is full: the host hears so
    EXPECT_EQ(window(2, JAL_WINDOW_ADD, 9, base, size).status, JAL_STATUS_BUSY);
    const std::vector<fake::FakeWindowCmd> want = {
        {JAL_WINDOW_ADD, 2, 9, base, size},
        {JAL_WINDOW_REMOVE, 2, 9, base, size},
        {JAL_WINDOW_CLEAR, 1, 9, 0, 0},
        {JAL_WINDOW_ADD, 2, 9, base, size},
    };
    EXPECT_EQ(dev.cp.window_cmds, want);

    // Refused before the command processor sees them: space 0 (no space is no window), an
    // unknown operation, a CLEAR naming a range, arguments in the reserved words.
    dev.cp.window_cmds.clear();
    EXPECT_EQ(window(2, JAL_WINDOW_ADD, 0, base, size).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(window(2, 0, 9, base, size).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(window(2, JAL_CP_WIN_CLEAR_FUNC, 9, 0, 0).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(window(2, JAL_WINDOW_CLEAR, 9, base, 0).status, JAL_STATUS_INVALID_FIELD);
    auto reserved = sqe(JAL_ADMIN_HOST_WINDOW, {JAL_WINDOW_ADD, 9, 0x1000, 0, 0x1000, 0});
    reserved.cdw[9] = 1;
    EXPECT_EQ(run(2, reserved).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_TRUE(dev.cp.window_cmds.empty());
}

TEST_F(ResourcesTest, AFunctionsWindowsGoWithItAndEveryOneAtInit)
{
    start();
    auto cleared = [&] {
        std::set<std::uint32_t> fns;
        for (const auto& c : dev.cp.window_cmds)
            if (c.cmd == JAL_CP_WIN_CLEAR_FUNC) fns.insert(c.fn);
        return fns;
    };
    // At init, every function's (a previous boot's may still be in the table).
    EXPECT_EQ(cleared().size(), std::size_t{JAL_MGMT_MAX_FUNCS});
    create_context(1);
    dev.cp.window_cmds.clear();
    res.functions_changed(bus.read32(JAL_HOSTIF_FUNC_PRESENT));
    EXPECT_EQ(cleared().count(1), 0u);  // still there: its windows stay
    bus.detach(1);
    res.functions_changed(bus.read32(JAL_HOSTIF_FUNC_PRESENT));
    EXPECT_EQ(cleared().count(1), 1u);
}

// ---------------------------------------------------------------- functions going away

TEST_F(ResourcesTest, DetachDestroysEverythingTheFunctionOwned)
{
    start();
    const auto mine = create_context(0);
    const auto theirs = create_context(1);
    const auto a = alloc_ok(mine, 4 * kPage, JAL_PLACE_INTERLEAVED, 0b11);
    alloc_ok(theirs, 3 * kPage, JAL_PLACE_REPLICATED, 0b101, 0, 1);
    alloc_ok(theirs, kPage, JAL_PLACE_SLICE, 0b1, 0, 1);
    const auto their_q = create_queue(1, theirs).result;
    const auto my_q = create_queue(0, mine).result;
    const auto after_mine = memory::kTotalPages - 4;

    bus.detach(1);
    res.functions_changed(bus.read32(JAL_HOSTIF_FUNC_PRESENT));
    EXPECT_EQ(free_pages(), after_mine);
    EXPECT_EQ(dev.mmu.mapped_pages(theirs), 0u);
    EXPECT_EQ(dev.cp.q[their_q].state, static_cast<std::uint32_t>(JAL_QUEUE_DISABLED));
    EXPECT_EQ(res.memory().owner(theirs), memory::kNoFunction);
    // Function 0 is untouched.
    EXPECT_EQ(res.memory().owner(mine), 0u);
    EXPECT_EQ(dev.mmu.mapped_pages(mine), 4u);
    EXPECT_EQ(dev.cp.q[my_q].state, static_cast<std::uint32_t>(JAL_QUEUE_ACTIVE));
    EXPECT_EQ(placement(0, mine, a.va, 0, 64).status, JAL_STATUS_OK);
    const auto* e = last_event(host::kEvFunctionCleanup);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->args[0], 1u);
    EXPECT_EQ(e->args[1], 1u);  // contexts
    EXPECT_EQ(e->args[2], 2u);  // allocations
    EXPECT_EQ(e->args[3], 1u);  // queues
}

TEST_F(ResourcesTest, ReattachBetweenPollsIsANewClient)
{
    start();
    const auto ctx = create_context(1);
    alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1, 0, 1);
    // Detach and attach before the firmware looks: the bit stays set, the generation moved.
    bus.detach(1);
    bus.attach(1);
    res.functions_changed(bus.read32(JAL_HOSTIF_FUNC_PRESENT));
    EXPECT_EQ(res.memory().owner(ctx), memory::kNoFunction);
    EXPECT_EQ(free_pages(), memory::kTotalPages);
}

TEST_F(ResourcesTest, AdminQueueReEnableIsNotADetach)
{
    start();
    // The client (re)enables its admin queue, then works; another function comes and goes.
    bus.host_write(1, JAL_FN_CTRL, JAL_ADMIN_CTRL_ENABLE);
    const auto ctx = create_context(1);
    alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1, 0, 1);
    bus.attach(2);
    res.functions_changed(bus.read32(JAL_HOSTIF_FUNC_PRESENT));
    bus.detach(2);
    res.functions_changed(bus.read32(JAL_HOSTIF_FUNC_PRESENT));
    EXPECT_EQ(res.memory().owner(ctx), 1u);
    EXPECT_EQ(res.memory().live_allocations(), 1u);
    EXPECT_FALSE(has_event(host::kEvFunctionCleanup));
}

// The whole firmware: boot initialises the resources, commands arrive through the admin
// queue, and a detach seen by the superloop cleans up after the function.
TEST(ResourcesFirmwareTest, SuperloopCleansUpAfterADetachedFunction)
{
    fake::FakeBus bus;
    bus.log_writes = false;
    fake::FakeMmuCp dev;
    dev.install(bus);
    auto fw = std::make_unique<Firmware>();
    ASSERT_FALSE(fw->boot().failed);
    EXPECT_EQ(dev.mmu.flushes.size(), JAL_MAX_CONTEXTS - 1u);
    EXPECT_EQ(fw->resources().memory().pages().free_pages_total(), memory::kTotalPages);

    constexpr std::uint32_t fn = 3;
    constexpr std::uint64_t sq = 0x100000, cq = 0x110000;
    bus.attach(fn);
    bus.host_write(fn, JAL_FN_SQ_BASE_LO, static_cast<std::uint32_t>(sq));
    bus.host_write(fn, JAL_FN_CQ_BASE_LO, static_cast<std::uint32_t>(cq));
    bus.host_write(fn, JAL_FN_QSIZE, 8 | 8 << 16);
    bus.host_write(fn, JAL_FN_CTRL, JAL_ADMIN_CTRL_ENABLE);
    (void)fw->poll_once();
    std::uint32_t tail = 0;
    auto submit = [&](jal_admin_sqe s) {
        s.cid = static_cast<std::uint16_t>(tail);
        std::memcpy(bus.host_ptr(fn, sq + tail * 64), &s, 64);
        const std::uint32_t slot = tail;
        tail = (tail + 1) % 8;
        bus.host_write(fn, JAL_FN_SQ_TAIL, tail);
        (void)fw->poll_once();
        jal_admin_cqe c;
        std::memcpy(&c, bus.host_ptr(fn, cq + slot * 16), 16);
        bus.host_write(fn, JAL_FN_CQ_HEAD, tail);
        return c;
    };
    const auto created = submit(ResourcesTest::sqe(JAL_ADMIN_CREATE_CONTEXT));
    ASSERT_EQ(created.status, JAL_STATUS_OK);
    const std::uint32_t ctx = created.result;
    const auto allocated = submit(ResourcesTest::sqe(
        JAL_ADMIN_ALLOC_MEMORY,
        {ctx, static_cast<std::uint32_t>(3 * kPage), 0, JAL_PLACE_INTERLEAVED, 0b111, 0, 0}, 64));
    ASSERT_EQ(allocated.status, JAL_STATUS_OK);
    const auto queue = submit(
        ResourcesTest::sqe(JAL_ADMIN_CREATE_QUEUE, {ctx, static_cast<std::uint32_t>(kRing), 0, 64,
                                                    static_cast<std::uint32_t>(kRptr), 0, 2}));
    ASSERT_EQ(queue.status, JAL_STATUS_OK);
    EXPECT_EQ(fw->resources().memory().pages().free_pages_total(), memory::kTotalPages - 3);
    EXPECT_EQ(dev.cp.q[queue.result].func, fn);

    bus.detach(fn);
    (void)fw->poll_once();
    EXPECT_EQ(fw->resources().memory().pages().free_pages_total(), memory::kTotalPages);
    EXPECT_EQ(fw->resources().memory().live_contexts(), 0u);
    EXPECT_EQ(fw->resources().queues().live(), 0u);
    EXPECT_EQ(dev.cp.q[queue.result].state, static_cast<std::uint32_t>(JAL_QUEUE_DISABLED));
    EXPECT_TRUE(dev.mmu.maps.empty());
}

}  // namespace

// ---------------------------------------------------------------- peer memory (1.8)

struct PeerResourcesTest : ResourcesTest {
    // Cabled fabric ports: the chip reserves its export table page and may export.
    void start_cabled()
    {
        bus.regs[JAL_LINK_CONNECTED_MASK] = 0x3;
        start();
    }
    host::Completion export_mem(std::uint32_t fn, std::uint32_t ctx, std::uint64_t va,
                                std::uint64_t bytes)
    {
        return run(fn,
                   sqe(JAL_ADMIN_EXPORT_MEMORY,
                       {ctx, static_cast<std::uint32_t>(va), static_cast<std::uint32_t>(va >> 32),
                        static_cast<std::uint32_t>(bytes), static_cast<std::uint32_t>(bytes >> 32)},
                       sizeof(jal_mem_export_reply)));
    }
    host::Completion import(std::uint32_t fn, std::uint32_t ctx, std::uint32_t chip,
                            std::uint32_t handle, std::uint64_t key, std::uint32_t pages)
    {
        return run(fn, sqe(JAL_ADMIN_IMPORT_PEER,
                           {ctx, chip, handle, static_cast<std::uint32_t>(key),
                            static_cast<std::uint32_t>(key >> 32), pages},
                           sizeof(jal_mem_alloc_reply)));
    }
    // Index in the MMU's command list of the first `cmd` at or after `from`.
    std::size_t first(std::uint32_t cmd, std::size_t from = 0) const
    {
        const auto& c = dev.mmu.commands;
        for (std::size_t i = from; i < c.size(); ++i)
            if (c[i] == cmd) return i;
        return c.size();
    }
};

TEST_F(PeerResourcesTest, OnlyACabledChipReservesTheTableAndExports)
{
    start();
    EXPECT_EQ(free_pages(), memory::kTotalPages);  // a single chip keeps every page
    const auto ctx = create_context();
    const auto r = alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1);
    EXPECT_EQ(export_mem(0, ctx, r.va, kPage).status, JAL_STATUS_UNSUPPORTED);
}

TEST_F(PeerResourcesTest, ExportsAreRevokedBeforeTheirPagesAreUnmappedAndScrubbed)
{
    start_cabled();
    EXPECT_EQ(free_pages(), memory::kTotalPages - 1);
    EXPECT_FALSE(res.memory().pages().is_free(JAL_EXPORT_TABLE_PA));
    EXPECT_EQ(commands.hbm_bytes_usable(), JAL_HBM_TOTAL_BYTES - kPage);
    const auto ctx = create_context();
    const auto r = alloc_ok(ctx, 3 * kPage, JAL_PLACE_SLICE, 1);

    const auto e = export_mem(0, ctx, r.va + kPage, 2 * kPage);
    ASSERT_EQ(e.status, JAL_STATUS_OK);
    const auto reply_ = reply<jal_mem_export_reply>();
    EXPECT_EQ(reply_.handle, e.result);
    EXPECT_EQ(reply_.key, std::uint64_t{e.result} + 1);  // the fake MMU's key
    EXPECT_EQ(reply_.chip, 7u);
    EXPECT_EQ(reply_.pages, 2u);
    EXPECT_EQ(reply_.va, r.va + kPage);
    EXPECT_EQ(dev.mmu.exported.at(reply_.handle), 2u);

    // Refused: another function, unaligned, empty, past the end, replicated.
    EXPECT_EQ(export_mem(1, ctx, r.va, kPage).status, JAL_STATUS_PERMISSION);
    EXPECT_EQ(export_mem(0, ctx, r.va + 4096, kPage).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(export_mem(0, ctx, r.va, 0).status, JAL_STATUS_INVALID_LENGTH);
    EXPECT_EQ(export_mem(0, ctx, r.va + kPage, 3 * kPage).status, JAL_STATUS_OUT_OF_RANGE);
    const auto rep = alloc_ok(ctx, kPage, JAL_PLACE_REPLICATED, 0b11);
    EXPECT_EQ(export_mem(0, ctx, rep.va, kPage).status, JAL_STATUS_INVALID_FIELD);

    // Boot revoked every slot (no export outlives a boot).
    EXPECT_EQ(dev.mmu.revoked.size(), std::size_t{JAL_MAX_EXPORTS});
    dev.mmu.revoked.clear();
    // Free: REVOKE first, then the unmaps and scrubs.
    const std::size_t before = dev.mmu.commands.size();
    ASSERT_EQ(free_mem(0, ctx, r.va).status, JAL_STATUS_OK);
    const std::size_t revoke = first(JAL_MMU_CMD_REVOKE, before);
    ASSERT_LT(revoke, dev.mmu.commands.size());
    EXPECT_LT(revoke, first(JAL_MMU_CMD_UNMAP, before));
    EXPECT_LT(revoke, first(JAL_MMU_CMD_SCRUB, before));
    EXPECT_EQ(dev.mmu.revoked, (std::vector<std::uint32_t>{reply_.handle}));
    EXPECT_TRUE(dev.mmu.exported.empty());

    // A context destroyed with an export out: the same order.
    const auto r2 = alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1);
    ASSERT_EQ(export_mem(0, ctx, r2.va, kPage).status, JAL_STATUS_OK);
    const std::size_t before2 = dev.mmu.commands.size();
    ASSERT_EQ(run(0, sqe(JAL_ADMIN_DESTROY_CONTEXT, {ctx})).status, JAL_STATUS_OK);
    const std::size_t revoke2 = first(JAL_MMU_CMD_REVOKE, before2);
    ASSERT_LT(revoke2, dev.mmu.commands.size());
    EXPECT_LT(revoke2, first(JAL_MMU_CMD_UNMAP, before2));
    EXPECT_LT(revoke2, first(JAL_MMU_CMD_FLUSH_CTX, before2));
    EXPECT_TRUE(dev.mmu.exported.empty());
}

TEST_F(PeerResourcesTest, ImportsMapAFreshRangeAndFreeingUnmapsOnly)
{
    start_cabled();
    const auto ctx = create_context();
    const auto own = alloc_ok(ctx, kPage, JAL_PLACE_SLICE, 1);
    ASSERT_EQ(export_mem(0, ctx, own.va, kPage).status, JAL_STATUS_OK);  // slot 0, key 1
    const std::uint32_t pages_before = free_pages();

    EXPECT_EQ(import(0, ctx, 2, 0, 99, 1).status, JAL_STATUS_PERMISSION);  // wrong key
    EXPECT_EQ(import(0, ctx, 2, 0, 1, 0).status, JAL_STATUS_INVALID_LENGTH);
    EXPECT_EQ(import(0, ctx, 2, JAL_MAX_EXPORTS, 1, 1).status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(import(1, ctx, 2, 0, 1, 1).status, JAL_STATUS_PERMISSION);  // not its context
    const auto c = import(0, ctx, 2, 0, 1, 1);
    ASSERT_EQ(c.status, JAL_STATUS_OK);
    const auto m = reply<jal_mem_alloc_reply>();
    EXPECT_EQ(m.placement, static_cast<std::uint32_t>(JAL_PLACE_PEER));
    EXPECT_EQ(m.pages, 1u);
    EXPECT_EQ(m.replicas, 0u);
    EXPECT_GT(m.va, own.va);  // a fresh address, after the allocation's guard page
    EXPECT_NE(dev.mmu.replicas(ctx, m.va), nullptr);
    EXPECT_EQ(free_pages(), pages_before);  // the pages are the peer's
    EXPECT_EQ(res.memory().pages_of(0), 1u);

    const std::size_t scrubs = dev.mmu.scrubbed.size();
    ASSERT_EQ(free_mem(0, ctx, m.va).status, JAL_STATUS_OK);
    EXPECT_EQ(dev.mmu.replicas(ctx, m.va), nullptr);
    EXPECT_EQ(dev.mmu.scrubbed.size(), scrubs);  // nothing of ours to scrub
    EXPECT_EQ(free_pages(), pages_before);
}
