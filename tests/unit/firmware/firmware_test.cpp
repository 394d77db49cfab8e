// The whole firmware on the fake chip: boot, status registers, superloop.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>

#include "fake_bus.hpp"
#include "firmware/firmware.hpp"
#include "firmware/version.hpp"
#include "jal/hw/events.h"
#include "jal/hw/regs.h"
#include "jal/hw/status.h"
#include "jal/hw/version.h"

using namespace jal::fw;

namespace {

struct FirmwareTest : ::testing::Test {
    fake::FakeBus bus;
    std::unique_ptr<Firmware> fw = std::make_unique<Firmware>();

    void SetUp() override { bus.log_writes = false; }
    bool has_event(std::uint16_t code) const
    {
        const auto& log = fw->events();
        for (std::uint32_t s = log.oldest_seq(); s < log.next_seq(); ++s)
            if (log.at(s).code == code) return true;
        return false;
    }
};

TEST_F(FirmwareTest, FitsInTheManagementCoreSram)
{
    // 256 KiB SRAM; leave room for stack and the image's own data.
    EXPECT_LT(sizeof(Firmware), 200u * 1024);
}

TEST_F(FirmwareTest, HealthyChipBootsReady)
{
    bus.log_writes = true;
    const auto out = fw->boot();
    EXPECT_FALSE(out.failed);
    EXPECT_EQ(bus.reg(JAL_HOSTIF_STATUS), JAL_REG_STATUS_READY);
    EXPECT_EQ(bus.reg(JAL_HOSTIF_VERSION), static_cast<std::uint32_t>(JAL_HW_VERSION));
    EXPECT_EQ(bus.reg(JAL_HOSTIF_CAP), JAL_CAP_ADMIN_QUEUE | JAL_CAP_MSIX);
    EXPECT_EQ(bus.reg(JAL_HOSTIF_FW_VERSION), kFwVersion);
    EXPECT_EQ(bus.writes_to(JAL_HOSTIF_STATUS).front(), JAL_REG_STATUS_BOOTING);
    EXPECT_EQ(fw->post_trail().count(), 11u);
    EXPECT_EQ(bus.reg(JAL_HOSTIF_BOOT_STATUS), 10u << 16);
    EXPECT_EQ(bus.reg(JAL_HOSTIF_POST_CODE), 0xa0u);
    EXPECT_EQ(bus.reg(JAL_WDT_CTRL), 1u);
    EXPECT_FALSE(bus.writes_to(JAL_WDT_FEED).empty());
    EXPECT_EQ(fw->hbm().usable_count(), static_cast<std::uint32_t>(JAL_HBM_CHANNELS));
    EXPECT_EQ(fw->slices().enabled(), ~0ull);
    EXPECT_EQ(fw->chip().state, static_cast<std::uint32_t>(JAL_CHIP_STATE_READY));
    EXPECT_EQ(bus.power.timing_violations, 0u);
    EXPECT_FALSE(bus.console_lines().empty());
}

TEST_F(FirmwareTest, HarvestedSlicesAndFailedChannelsBootDegraded)
{
    bus.slices.fused = 1ull << 63;
    // Slice 4's three channels all fail: the slice loses its memory and is disabled.
    for (std::uint32_t ch = 12; ch < 15; ++ch)
        for (std::uint32_t l = 0; l < 5; ++l) bus.phy.truth[ch].lanes[l].dead = true;
    const auto out = fw->boot();
    EXPECT_FALSE(out.failed);
    EXPECT_EQ(bus.reg(JAL_HOSTIF_STATUS), JAL_REG_STATUS_READY | JAL_REG_STATUS_DEGRADED);
    EXPECT_EQ(fw->slices().enabled(), ~((1ull << 63) | (1ull << 4)));
    EXPECT_EQ(bus.slices.enable, fw->slices().enabled());
    EXPECT_EQ(fw->hbm().channels[189].status, JAL_HBM_CH_UNTRAINED)
        << "fused slice's channels are not trained";
    EXPECT_TRUE(has_event(host::kEvSliceNoMemory));
}

TEST_F(FirmwareTest, TooFewGoodSlicesFailsTheChipButAdminStillServes)
{
    bus.slices.failing = 0xffffull;  // 48 left
    const auto out = fw->boot();
    EXPECT_TRUE(out.failed);
    EXPECT_EQ(out.failed_step, 5u);
    EXPECT_EQ(bus.reg(JAL_HOSTIF_STATUS), JAL_REG_STATUS_FAILED);
    EXPECT_EQ(bus.reg(JAL_HOSTIF_FAULT), static_cast<std::uint32_t>(JAL_STATUS_HW_FAILED));
    EXPECT_EQ(fw->post_trail().count(), 6u);

    // The host can still enable its admin queue and read identify.
    bus.attach(0);
    constexpr std::uint64_t sq = 0x100000, cq = 0x110000, data = 0x120000;
    bus.host_write(0, JAL_FN_SQ_BASE_LO, sq);
    bus.host_write(0, JAL_FN_CQ_BASE_LO, cq);
    bus.host_write(0, JAL_FN_QSIZE, 4 | 4 << 16);
    bus.host_write(0, JAL_FN_CTRL, JAL_ADMIN_CTRL_ENABLE);
    jal_admin_sqe s{};
    s.opcode = JAL_ADMIN_IDENTIFY;
    s.cid = 9;
    s.data_addr = data;
    s.data_len = 512;
    std::memcpy(bus.host_ptr(0, sq), &s, 64);
    bus.host_write(0, JAL_FN_SQ_TAIL, 1);
    (void)fw->poll_once();
    jal_admin_cqe c;
    std::memcpy(&c, bus.host_ptr(0, cq), 16);
    EXPECT_EQ(c.flags & 1, 1);
    EXPECT_EQ(c.status, static_cast<std::uint32_t>(JAL_STATUS_OK));
    jal_identify id;
    std::memcpy(&id, bus.host_ptr(0, data), sizeof id);
    EXPECT_EQ(id.state, static_cast<std::uint32_t>(JAL_CHIP_STATE_FAILED));
    EXPECT_EQ(id.slices_enabled, 48u);
}

TEST_F(FirmwareTest, BootStepsCarryTheContractsPostNames)
{
    (void)fw->boot();
    const auto& log = fw->events();
    std::uint32_t steps = 0;
    for (std::uint32_t s = log.oldest_seq(); s < log.next_seq(); ++s) {
        const jal_log_event& e = log.at(s);
        if (e.code != host::kEvBootStep) continue;
        ++steps;
        // The firmware's step name (the event text) is what hosts print for the POST code.
        EXPECT_STREQ(e.text, jal_post_step_name(e.args[1])) << "step " << e.args[0];
    }
    EXPECT_EQ(steps, 11u);
}

TEST_F(FirmwareTest, ConsoleLinesNameEventArguments)
{
    for (std::uint32_t l = 0; l < 6; ++l) bus.phy.truth[100].lanes[l].dead = true;  // > spares
    (void)fw->boot();
    bool found = false;
    for (const auto& line : bus.console_lines())
        if (line.find("hbm channel failed channel=100 dead_lanes=6 "
                      "reason=too_many_dead_lanes") != std::string::npos)
            found = true;
    EXPECT_TRUE(found) << "no decoded hbm channel failed line";
}

TEST_F(FirmwareTest, EnablingAnAdminQueueIsHousekeepingOutsideTheRing)
{
    (void)fw->boot();
    const std::uint32_t next = fw->events().next_seq();
    bus.attach(0);
    for (int i = 0; i < 300; ++i) {
        bus.host_write(0, JAL_FN_SQ_BASE_LO, 0x100000);
        bus.host_write(0, JAL_FN_CQ_BASE_LO, 0x110000);
        bus.host_write(0, JAL_FN_QSIZE, 4 | 4 << 16);
        bus.host_write(0, JAL_FN_CTRL, JAL_ADMIN_CTRL_ENABLE);
        (void)fw->poll_once();
        bus.host_write(0, JAL_FN_CTRL, 0);
        (void)fw->poll_once();
    }
    std::size_t enabled = 0;  // each enable still reaches the console, at debug level
    for (const auto& line : bus.console_lines())
        if (line.find("admin: debug: admin queue enabled function=0") != std::string::npos)
            ++enabled;
    EXPECT_EQ(enabled, 300u);
    EXPECT_FALSE(has_event(host::kEvAdminQueueEnabled));
    EXPECT_EQ(fw->events().oldest_seq(), 0u) << "boot events were pushed out";
    EXPECT_EQ(fw->events().next_seq(), next);
}

TEST_F(FirmwareTest, WatchdogRecoveryIsLoggedAndCounted)
{
    bus.reset_cause = JAL_RESET_CAUSE_WATCHDOG;
    bus.boot_count = 3;
    bus.wdt_resets = 2;  // the count since power-on comes from SYS, not from this boot
    (void)fw->boot();
    EXPECT_TRUE(has_event(host::kEvWatchdogRecovery));
    EXPECT_EQ(fw->power().telemetry().watchdog_resets, 2u);
    EXPECT_EQ(fw->chip().boot_count, 3u);
}

TEST_F(FirmwareTest, SuperloopTicksFeedTheWatchdogAndRefreshTelemetry)
{
    (void)fw->boot();
    bus.log_writes = true;
    bus.writes.clear();
    const auto seq0 = fw->power().telemetry().seq;
    for (int i = 0; i < 20; ++i) EXPECT_EQ(fw->poll_once(), host::AfterAction::kNone);
    EXPECT_EQ(bus.writes_to(JAL_WDT_FEED).size(), 20u);
    EXPECT_EQ(fw->power().telemetry().seq, seq0 + 20);
    EXPECT_EQ(fw->power().telemetry().power_limit_mw, JAL_POWER_TDP_MW);
    EXPECT_GT(fw->power().telemetry().uptime_us, 0u);
}

TEST_F(FirmwareTest, BootFeedsTheWatchdogOftenEnough)
{
    bus.log_writes = true;
    std::uint64_t last_feed = 0, worst = 0;
    bool armed = false;
    bus.write_hook = [&](std::uint32_t addr, std::uint32_t v) {
        if (addr == JAL_WDT_CTRL && v == 1) armed = true;
        if (addr == JAL_WDT_FEED) {
            if (armed) worst = std::max(worst, bus.now_us() - last_feed);
            last_feed = bus.now_us();
        }
    };
    (void)fw->boot();
    EXPECT_LT(worst, 50000u / 2) << "longest gap between feeds, us";
}

}  // namespace
