// The boot runner: order, POST codes, BOOT_STATUS, POST trail, fatal vs non-fatal.
#include <gtest/gtest.h>

#include <vector>

#include "fake_bus.hpp"
#include "firmware/boot/boot_table.hpp"
#include "jal/hw/status.h"

namespace {

struct Ctx {
    std::vector<int> ran;
    std::uint32_t status_of_2 = JAL_STATUS_OK;
    std::uint32_t status_of_3 = JAL_STATUS_OK;
};

using Step = jal::fw::boot::BootStep<Ctx>;
const Step kSteps[] = {
    {0x11, "one", true,
     [](Ctx& c) -> std::uint32_t {
         c.ran.push_back(1);
         return JAL_STATUS_OK;
     }},
    {0x22, "two", false,
     [](Ctx& c) {
         c.ran.push_back(2);
         return c.status_of_2;
     }},
    {0x33, "three", true,
     [](Ctx& c) {
         c.ran.push_back(3);
         return c.status_of_3;
     }},
    {0x44, "four", true,
     [](Ctx& c) -> std::uint32_t {
         c.ran.push_back(4);
         return JAL_STATUS_OK;
     }},
};

struct BootTableTest : ::testing::Test {
    fake::FakeBus bus;
    jal::fw::host::EventLog log;
    jal::fw::host::Journal journal{log};
    jal::fw::boot::PostTrail trail;
    Ctx ctx;
    jal::fw::boot::BootOutcome run()
    {
        return jal::fw::boot::run_boot_table<Ctx>(kSteps, ctx, trail, journal);
    }
};

TEST_F(BootTableTest, RunsEveryStepInOrderWritingPostCodesAndBootStatus)
{
    const auto out = run();
    EXPECT_FALSE(out.failed);
    EXPECT_EQ(ctx.ran, (std::vector<int>{1, 2, 3, 4}));
    EXPECT_EQ(bus.writes_to(JAL_HOSTIF_POST_CODE),
              (std::vector<std::uint32_t>{0x11, 0x22, 0x33, 0x44}));
    EXPECT_EQ(bus.writes_to(JAL_HOSTIF_BOOT_STATUS),
              (std::vector<std::uint32_t>{0 << 16, 1 << 16, 2 << 16, 3 << 16}));
    ASSERT_EQ(trail.count(), 4u);
    EXPECT_EQ(trail.at(2).post_code, 0x33);
    EXPECT_EQ(trail.at(2).step, 2);
    EXPECT_LE(trail.at(0).timestamp_us, trail.at(3).timestamp_us);
}

TEST_F(BootTableTest, PostCodeIsWrittenBeforeTheStepRuns)
{
    std::vector<std::uint32_t> post_at_run;
    bus.write_hook = [&](std::uint32_t addr, std::uint32_t v) {
        if (addr == JAL_HOSTIF_POST_CODE) post_at_run.push_back(v);
    };
    (void)run();
    EXPECT_EQ(post_at_run.front(), 0x11u);
}

TEST_F(BootTableTest, NonFatalFailureContinues)
{
    ctx.status_of_2 = JAL_STATUS_TIMEOUT;
    const auto out = run();
    EXPECT_FALSE(out.failed);
    EXPECT_EQ(out.nonfatal_failures, 1u);
    EXPECT_EQ(ctx.ran.size(), 4u);
    EXPECT_EQ(bus.writes_to(JAL_HOSTIF_BOOT_STATUS)[1], (1u << 16) | JAL_STATUS_TIMEOUT);
    EXPECT_EQ(trail.at(1).status, JAL_STATUS_TIMEOUT);
}

TEST_F(BootTableTest, FatalFailureStopsTheBoot)
{
    ctx.status_of_3 = JAL_STATUS_HW_FAILED;
    const auto out = run();
    EXPECT_TRUE(out.failed);
    EXPECT_EQ(out.fault, JAL_STATUS_HW_FAILED);
    EXPECT_EQ(out.failed_step, 2u);
    EXPECT_EQ(ctx.ran, (std::vector<int>{1, 2, 3}));
    EXPECT_EQ(trail.count(), 3u);
    EXPECT_EQ(bus.writes_to(JAL_HOSTIF_BOOT_STATUS).back(), (2u << 16) | JAL_STATUS_HW_FAILED);
    // The failure is in the event log and on the console.
    bool logged = false;
    for (std::uint32_t s = log.oldest_seq(); s < log.next_seq(); ++s)
        logged |= log.at(s).severity == JAL_SEV_FATAL && std::string(log.at(s).text) == "three";
    EXPECT_TRUE(logged);
    EXPECT_FALSE(bus.console_lines().empty());
}

}  // namespace
