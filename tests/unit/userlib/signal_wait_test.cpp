// Signal waits (runtime/signal.hpp) in the three modes, with interrupts delivered through
// the fake backend's eventfds the way the emulator raises MSI-X vectors.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <unistd.h>
#include <vector>

#include <jal/error.hpp>
#include <jal/hw/pci.h>

#include "common/thread_state.hpp"
#include "fake_backend.hpp"
#include "runtime/irq_hub.hpp"
#include "runtime/signal.hpp"

namespace {

using namespace std::chrono_literals;
using namespace jal::runtime::detail;

using jal::test::kPollCalls;
using jal::test::kPollOrFutexCalls;
using jal::test::wait_until_blocked;

class SignalWait : public ::testing::Test {
protected:
    void SetUp() override
    {
        hub.ensure_bound();
        slot = pool.allocate();
        store_signal(slot.host, 1);
    }
    // What the device does when a packet completes: status, value, then the interrupt.
    void complete(int64_t value, jal_status status, uint32_t vector = 3)
    {
        store_signal(slot.host, value, status);
        backend.raise_irq(vector);
    }
    WaitOptions zero(WaitMode mode, std::chrono::nanoseconds timeout = 10s)
    {
        WaitOptions o;
        o.mode = mode;
        o.timeout = timeout;
        return o;
    }

    jal::testing::FakeBackend backend;
    SignalPool pool{backend};
    IrqHub hub{backend};
    SignalPool::Slot slot;
};

TEST_F(SignalWait, PoolHandsOutDistinctAlignedSlotsWithBusAddresses)
{
    auto other = pool.allocate();
    EXPECT_NE(other.host, slot.host);
    EXPECT_NE(other.bus_addr, slot.bus_addr);
    EXPECT_EQ(other.bus_addr % 16, 0u);
    EXPECT_EQ(pool.in_use(), 2u);
    pool.release(other);
    EXPECT_EQ(pool.in_use(), 1u);
    // Enough to need a second chunk.
    std::vector<SignalPool::Slot> many;
    for (int i = 0; i < 5000; i++) many.push_back(pool.allocate());
    for (auto& s : many) pool.release(s);
}

TEST_F(SignalWait, ConditionsCompareAsDocumented)
{
    EXPECT_TRUE(condition_holds(SignalCondition::eq, 0, 0));
    EXPECT_TRUE(condition_holds(SignalCondition::ne, 1, 0));
    EXPECT_TRUE(condition_holds(SignalCondition::lt, -1, 0));
    EXPECT_FALSE(condition_holds(SignalCondition::lt, 0, 0));
    EXPECT_TRUE(condition_holds(SignalCondition::gte, 5, 5));
    EXPECT_FALSE(condition_holds(SignalCondition::gte, 4, 5));
}

TEST_F(SignalWait, AlreadySatisfiedReturnsAtOnceInEveryMode)
{
    store_signal(slot.host, 0, JAL_STATUS_PAGE_FAULT);
    for (auto mode : {WaitMode::poll, WaitMode::interrupt, WaitMode::hybrid}) {
        auto r = wait_signal(slot.host, zero(mode), &hub);
        EXPECT_TRUE(r.satisfied);
        EXPECT_EQ(r.value, 0);
        EXPECT_EQ(r.status, JAL_STATUS_PAGE_FAULT);
    }
}

TEST_F(SignalWait, TimesOutInEveryMode)
{
    for (auto mode : {WaitMode::poll, WaitMode::interrupt, WaitMode::hybrid}) {
        auto r = wait_signal(slot.host, zero(mode, 5ms), &hub);
        EXPECT_FALSE(r.satisfied);
        EXPECT_EQ(r.value, 1);
    }
}

TEST_F(SignalWait, PollSeesACompletionFromAnotherThread)
{
    std::atomic<bool> waiting{false};
    std::thread device([&] {
        while (!waiting.load()) std::this_thread::yield();
        store_signal(slot.host, 0, JAL_STATUS_OK);
    });
    waiting = true;
    auto r = wait_signal(slot.host, zero(WaitMode::poll), &hub);
    device.join();
    EXPECT_TRUE(r.satisfied);
    EXPECT_EQ(r.status, JAL_STATUS_OK);
}

TEST_F(SignalWait, InterruptWakesASleepingWaiterWithThePacketStatus)
{
    const pid_t waiter = ::gettid();
    std::thread device([&] {
        wait_until_blocked(waiter, kPollCalls);
        complete(0, JAL_STATUS_DMA_FAULT);
    });
    auto r = wait_signal(slot.host, zero(WaitMode::interrupt), &hub);
    device.join();
    EXPECT_TRUE(r.satisfied);
    EXPECT_EQ(r.status, JAL_STATUS_DMA_FAULT);
    EXPECT_GE(hub.interrupts(), 1u);
}

TEST_F(SignalWait, OneInterruptWakesEveryWaiter)
{
    constexpr int kWaiters = 4;
    std::vector<std::thread> waiters;
    std::vector<std::atomic<pid_t>> tids(kWaiters);
    std::atomic<int> woke{0};
    for (int i = 0; i < kWaiters; i++)
        waiters.emplace_back([&, i] {
            tids[i] = ::gettid();
            if (wait_signal(slot.host, zero(WaitMode::interrupt), &hub).satisfied) woke++;
        });
    for (auto& tid : tids) {
        while (tid.load() == 0) std::this_thread::yield();
        wait_until_blocked(tid, kPollOrFutexCalls);
    }
    complete(0, JAL_STATUS_OK, JAL_MSIX_VECTORS - 1);
    for (auto& t : waiters) t.join();
    EXPECT_EQ(woke, kWaiters);
}

TEST_F(SignalWait, HybridSleepsAfterSpinning)
{
    WaitOptions o = zero(WaitMode::hybrid);
    o.spin = 100us;
    const pid_t waiter = ::gettid();
    std::thread device([&] {
        wait_until_blocked(waiter, kPollCalls);  // spun, then went to sleep
        complete(0, JAL_STATUS_OK);
    });
    auto r = wait_signal(slot.host, o, &hub);
    device.join();
    EXPECT_TRUE(r.satisfied);
    EXPECT_GE(hub.interrupts(), 1u);
}

TEST_F(SignalWait, WaitsForOtherConditionsAndValues)
{
    WaitOptions o = zero(WaitMode::interrupt);
    o.condition = SignalCondition::lt;
    o.compare = -5;
    const pid_t waiter = ::gettid();
    std::thread device([&] {
        for (int v = 0; v >= -6; v--) {
            wait_until_blocked(waiter, kPollCalls);
            uint64_t before = hub.generation();
            complete(v, JAL_STATUS_OK);
            // Until the waiter took the interrupt (then it looks at v and, but for the last
            // one, sleeps again).
            auto deadline = std::chrono::steady_clock::now() + 10s;
            while (hub.generation() == before && std::chrono::steady_clock::now() < deadline)
                std::this_thread::yield();
        }
    });
    auto r = wait_signal(slot.host, o, &hub);
    device.join();
    EXPECT_TRUE(r.satisfied);
    EXPECT_LT(r.value, -5);
}

TEST_F(SignalWait, InterruptModeWithoutADeviceIsRefused)
{
    EXPECT_THROW(wait_signal(slot.host, zero(WaitMode::interrupt), nullptr), jal::Error);
}

}  // namespace
