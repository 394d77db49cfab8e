// AdminQueue against the scripted FakeBackend: enabling, doorbells, cids, full rings,
// timeouts and late completions, concurrent callers.
#include <gtest/gtest.h>

#include <set>
#include <thread>

#include <jal/error.hpp>
#include <jal/hw/pci.h>
#include <jal/hw/regs.h>

#include "admin/admin_queue.hpp"
#include "fake_backend.hpp"

namespace {

using namespace std::chrono_literals;
using jal::admin::AdminQueue;
using jal::admin::AdminQueueConfig;
using jal::testing::FakeBackend;

jal_admin_sqe command(uint32_t tag, uint8_t opcode = JAL_ADMIN_GET_FEATURE)
{
    jal_admin_sqe sqe{};
    sqe.opcode = opcode;
    sqe.cdw[0] = tag;
    return sqe;
}

AdminQueueConfig entries(uint16_t n)
{
    return AdminQueueConfig{n, 200ms};
}

TEST(AdminQueue, EnableProgramsRingsAndWaitsForReady)
{
    FakeBackend dev;
    AdminQueue queue(dev, entries(8));
    EXPECT_EQ(dev.read32(0, JAL_REG_ADMIN_QSIZE), 8u | 8u << 16);
    EXPECT_NE(dev.read32(0, JAL_REG_ADMIN_SQ_BASE_LO), 0u);
    EXPECT_EQ(dev.read32(0, JAL_REG_ADMIN_CTRL), JAL_ADMIN_CTRL_ENABLE);
}

TEST(AdminQueue, EnableErrorReportsTheDeviceStatus)
{
    FakeBackend dev;
    dev.refuse_enable = JAL_STATUS_INVALID_FIELD;
    try {
        AdminQueue queue(dev, entries(8));
        FAIL() << "enable should have failed";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_INVALID_FIELD);
        EXPECT_NE(std::string(e.what()).find("invalid field"), std::string::npos) << e.what();
    }
}

TEST(AdminQueue, EnableThatNeverBecomesReadyTimesOut)
{
    FakeBackend dev;
    dev.never_ready = true;
    try {
        AdminQueue queue(dev, entries(8));
        FAIL() << "enable should have timed out";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_TIMEOUT);
    }
}

TEST(AdminQueue, ManyCommandsThroughASmallRingWrapThePhase)
{
    FakeBackend dev;
    AdminQueue queue(dev, entries(4));
    for (uint32_t i = 0; i < 100; i++) {
        auto done = queue.execute(command(i), 1s);
        EXPECT_EQ(done.status, JAL_STATUS_OK);
        EXPECT_EQ(done.result, i);
    }
    EXPECT_EQ(dev.cq_head_doorbell(), 100u % 4);
    EXPECT_FALSE(dev.cq_overflowed());
    EXPECT_EQ(queue.in_flight(), 0u);
}

TEST(AdminQueue, ErrorCompletionsAreReturnedWithTheirStatus)
{
    FakeBackend dev;
    dev.handler = [](const jal_admin_sqe&) {
        jal_admin_cqe cqe{};
        cqe.status = JAL_STATUS_INVALID_OPCODE;
        return cqe;
    };
    AdminQueue queue(dev, entries(4));
    EXPECT_EQ(queue.execute(command(1, 0x55), 1s).status, JAL_STATUS_INVALID_OPCODE);
}

TEST(AdminQueue, FullRingRefusesWithoutErrorAndCidsAreDistinct)
{
    FakeBackend dev;
    dev.auto_complete = false;
    AdminQueue queue(dev, entries(8));
    std::set<uint16_t> cids;
    std::map<uint16_t, uint32_t> tag_of;
    for (uint32_t i = 0;; i++) {
        auto cid = queue.try_submit(command(i));
        if (!cid) break;
        EXPECT_TRUE(cids.insert(*cid).second) << "cid " << *cid << " handed out twice";
        tag_of[*cid] = i;
    }
    EXPECT_EQ(cids.size(), 7u);
    EXPECT_EQ(queue.in_flight(), 7u);

    dev.complete_pending();
    EXPECT_FALSE(dev.cq_overflowed());
    // Waited for in an order different from completion order.
    for (auto it = tag_of.rbegin(); it != tag_of.rend(); ++it)
        EXPECT_EQ(queue.wait(it->first, jal::util::Deadline(1s)).result, it->second);
    EXPECT_TRUE(queue.try_submit(command(99)).has_value());
}

TEST(AdminQueue, SubmitWaitsForRoomThenGivesUp)
{
    FakeBackend dev;
    dev.auto_complete = false;
    AdminQueue queue(dev, entries(2));
    queue.submit(command(0), jal::util::Deadline(100ms));
    try {
        queue.submit(command(1), jal::util::Deadline(100ms));
        FAIL() << "a full ring should refuse";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_BUSY);
    }
}

TEST(AdminQueue, ACommandLostToAResetFailsWithDeviceResetInsteadOfTimingOut)
{
    FakeBackend dev;
    dev.auto_complete = false;
    AdminQueue queue(dev, entries(4));
    uint16_t cid = queue.submit(command(1, JAL_ADMIN_IDENTIFY), jal::util::Deadline(1s));
    // The chip resets: RESET_GENERATION moves and every bound vector fires once.
    dev.write32(JAL_BAR_REGS, JAL_REG_RESET_GENERATION, 1);
    dev.raise_irq(JAL_MSIX_VECTOR_ADMIN);
    try {
        queue.wait(cid, jal::util::Deadline(60s));  // a bound on a hang, not a timing expectation
        FAIL() << "a command the reset took away completed";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_DEVICE_RESET);
        EXPECT_STREQ(e.what(),
                     "admin command IDENTIFY lost: the device was reset while it was in flight "
                     "(reset generation 0 -> 1)");
    }
}

// FW_ACTIVATE and RESET complete and then reset the chip: a completion that lands just before
// the reset is the command's answer, not a command the reset lost (the host looks at the
// generation before it reaps the ring).
TEST(AdminQueue, ACompletionRightBeforeAResetIsTheCommandsAnswer)
{
    FakeBackend dev;
    dev.auto_complete = false;
    AdminQueue queue(dev, entries(4));
    uint16_t cid = queue.submit(command(7, JAL_ADMIN_FW_ACTIVATE), jal::util::Deadline(1s));
    dev.answer_then_reset_at_generation_read = true;
    dev.raise_irq(JAL_MSIX_VECTOR_ADMIN);
    const auto done = queue.wait(cid, jal::util::Deadline(60s));  // a bound on a hang
    EXPECT_EQ(done.status, JAL_STATUS_OK);
    EXPECT_EQ(done.result, 7u);
    EXPECT_EQ(dev.read32(JAL_BAR_REGS, JAL_REG_RESET_GENERATION), 1u) << "the chip did reset";
}

TEST(AdminQueue, TimeoutNamesTheCommandAndALateCompletionIsDiscarded)
{
    FakeBackend dev;
    dev.auto_complete = false;
    AdminQueue queue(dev, entries(4));
    try {
        queue.execute(command(1, JAL_ADMIN_IDENTIFY), 100ms);
        FAIL() << "expected a timeout";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_TIMEOUT);
        EXPECT_STREQ(e.what(), "admin command IDENTIFY timed out after 100 ms without progress");
    }
    dev.complete_pending();  // the late answer
    dev.auto_complete = true;
    auto done = queue.execute(command(2), 1s);
    EXPECT_EQ(done.result, 2u);
    EXPECT_EQ(queue.in_flight(), 0u);
}

TEST(AdminQueue, ACommandTheFirmwareKeepsWorkingOnOutlivesItsBudget)
{
    // The budget counts time without progress: each look at JAL_REG_ADMIN_PROGRESS comes
    // once a 50 ms budget has run out, so this command takes six budgets and still answers.
    FakeBackend dev;
    AdminQueue queue(dev, entries(4));
    dev.auto_complete = false;
    dev.busy_looks = 6;
    auto done = queue.execute(command(7, JAL_ADMIN_FREE_MEMORY), 50ms);
    EXPECT_EQ(done.status, JAL_STATUS_OK);
    EXPECT_EQ(done.result, 7u);
    EXPECT_EQ(dev.busy_looks, 0u) << "answered before the firmware had finished";
}

TEST(AdminQueue, ProgressThatNeverEndsInAnAnswerStillTimesOut)
{
    FakeBackend dev;
    AdminQueue queue(dev, AdminQueueConfig{4, 200ms, 300ms});
    dev.auto_complete = false;
    dev.busy_forever = true;
    try {
        queue.execute(command(1, JAL_ADMIN_FREE_MEMORY), 50ms);
        FAIL() << "expected a timeout";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_TIMEOUT);
        EXPECT_STREQ(e.what(), "admin command FREE_MEMORY timed out after 300 ms in all, the "
                               "firmware still working");
    }
}

TEST(AdminQueue, WaitingForAnUnknownCidIsAnError)
{
    FakeBackend dev;
    AdminQueue queue(dev, entries(4));
    EXPECT_THROW(queue.wait(1234, jal::util::Deadline(10ms)), jal::Error);
}

TEST(AdminQueue, ConcurrentCallersEachGetTheirOwnCompletion)
{
    FakeBackend dev;
    AdminQueue queue(dev, entries(4));
    std::vector<std::thread> threads;
    std::atomic<int> wrong{0};
    for (uint32_t t = 0; t < 4; t++)
        threads.emplace_back([&, t] {
            for (uint32_t i = 0; i < 200; i++) {
                uint32_t tag = t << 16 | i;
                if (queue.execute(command(tag), 5s).result != tag) wrong++;
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(wrong.load(), 0);
    EXPECT_FALSE(dev.cq_overflowed());
}

TEST(AdminQueue, CompletionFromAnotherThreadWakesTheWaiter)
{
    FakeBackend dev;
    dev.auto_complete = false;
    AdminQueue queue(dev, entries(4));
    std::thread device([&] {
        // Until the command is submitted (a generous bound: then execute() times out).
        auto deadline = std::chrono::steady_clock::now() + 10s;
        while (dev.pending() == 0 && std::chrono::steady_clock::now() < deadline)
            std::this_thread::yield();
        dev.complete_pending();
    });
    EXPECT_EQ(queue.execute(command(42), 5s).result, 42u);
    device.join();
}

}  // namespace
