// jal_device_memory_info and jal_device_telemetry (API 1.3) through a real jal-emu.
#include <gtest/gtest.h>

#include "runtime_fixture.hpp"

namespace {

using namespace jal::runtime;
using jal::test::RuntimeTest;

constexpr uint64_t kPage = JAL_PAGE_SIZE;

class DeviceInfoTest : public RuntimeTest {};

TEST_F(DeviceInfoTest, MemoryInfoFollowsAllocationsPerSlice)
{
    const jal_identify id = dev().identify();
    const jal_device_memory_info_t before = dev().memory_info();
    EXPECT_EQ(before.struct_size, sizeof before);
    EXPECT_EQ(before.slices, id.slices_enabled);
    EXPECT_EQ(before.total_bytes, id.hbm_bytes_usable);
    EXPECT_EQ(before.page_size, kPage);
    EXPECT_EQ(before.used_bytes, before.total_bytes - before.free_bytes);
    EXPECT_EQ(before.client_bytes, 0u);

    Context ctx(dev());
    Memory one(ctx, 3 * kPage, JAL_PLACE_SLICE, 1ull << 4);
    Memory copies(ctx, 2 * kPage, JAL_PLACE_REPLICATED, 0b11);
    const jal_device_memory_info_t after = dev().memory_info();
    EXPECT_EQ(after.used_bytes, before.used_bytes + 7 * kPage);
    EXPECT_EQ(after.client_bytes, 7 * kPage);
    EXPECT_EQ(after.allocations, before.allocations + 2);
    EXPECT_EQ(after.contexts, before.contexts + 1);
    EXPECT_EQ(after.slice_pages_free[4], before.slice_pages_free[4] - 3);
    EXPECT_EQ(after.slice_pages_free[0], before.slice_pages_free[0] - 2);
    EXPECT_EQ(after.slice_pages_free[1], before.slice_pages_free[1] - 2);
    EXPECT_EQ(after.slice_pages_free[2], before.slice_pages_free[2]);
    uint64_t pages = 0;
    for (uint32_t s = 0; s < after.slices; ++s) pages += after.slice_pages_free[s];
    EXPECT_EQ(pages * kPage, after.free_bytes);

    // Another client's memory counts as used, not as this client's.
    Device other(0, emu().socket_dir());
    EXPECT_EQ(other.memory_info().used_bytes, after.used_bytes);
    EXPECT_EQ(other.memory_info().client_bytes, 0u);
}

TEST_F(DeviceInfoTest, MemoryInfoFillsOnlyWhatAnOlderCallerKnows)
{
    // A caller built against a header whose struct ended before the per-slice arrays.
    jal_device_memory_info_t m{};
    std::memset(&m, 0xab, sizeof m);
    m.struct_size = offsetof(jal_device_memory_info_t, slice_pages_total);
    ASSERT_EQ(jal_device_memory_info(dev().get(), &m), JAL_STATUS_OK);
    EXPECT_EQ(m.struct_size, offsetof(jal_device_memory_info_t, slice_pages_total));
    EXPECT_GT(m.total_bytes, 0u);
    EXPECT_EQ(m.slice_pages_total[0], 0xababababu);  // beyond its struct: untouched

    m.struct_size = 0;
    EXPECT_EQ(jal_device_memory_info(dev().get(), &m), JAL_STATUS_INVALID_FIELD);
    EXPECT_NE(std::string(jal_last_error_message()).find("struct_size"), std::string::npos);
    EXPECT_EQ(jal_device_memory_info(nullptr, &m), JAL_STATUS_INVALID_FIELD);
}

TEST_F(DeviceInfoTest, TelemetryIsTheFirmwaresSample)
{
    const jal_identify id = dev().identify();
    const jal_telemetry t = dev().telemetry();
    EXPECT_EQ(t.struct_size, sizeof t);
    EXPECT_GT(t.power_mw, 0u);
    EXPECT_EQ(t.power_limit_mw, id.power_limit_mw);
    EXPECT_EQ(t.clock_max_mhz, id.clock_max_mhz);
    EXPECT_GE(t.clock_mhz, id.clock_min_mhz);
    EXPECT_LE(t.clock_mhz, id.clock_max_mhz);
    EXPECT_GT(t.temp_junction_mc, 0);
    // Samples move on: wait (bounded) until a later one is reported.
    jal_telemetry later = t;
    for (int i = 0; i < 10000 && later.seq == t.seq; ++i) later = dev().telemetry();
    EXPECT_GT(later.seq, t.seq);
    EXPECT_GE(later.timestamp_us, t.timestamp_us);

    jal_telemetry small{};
    small.struct_size = offsetof(jal_telemetry, power_limit_mw);
    ASSERT_EQ(jal_device_telemetry(dev().get(), &small), JAL_STATUS_OK);
    EXPECT_EQ(small.struct_size, offsetof(jal_telemetry, power_limit_mw));
    EXPECT_EQ(small.power_limit_mw, 0u);
}

}  // namespace
