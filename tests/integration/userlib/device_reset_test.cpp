// Device loss through the direct backend: a client with live handles and pending waits,
// another process resets the chip (jalctl reset, or the firmware watchdog), and the client
// learns it from JAL_STATUS_DEVICE_RESET, releases its handles and carries on with a
// re-opened device. jalctl reset refuses while the client is attached and lists it.
#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <unistd.h>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <jal/hw/admin.h>
#include <jal/hw/events.h>
#include <jal/hw/mgmt.h>
#include <jal/jal.hpp>

#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"

namespace {

using namespace std::chrono_literals;
using jal::test::CommandResult;
using nlohmann::json;

// Bounds on conditions, never sleeps: a reset is announced within a second; these only
// keep a broken build from hanging the suite.
constexpr auto kWaitBound = 60s;
const std::string kBootWait = std::to_string(jal::test::kBootTimeout.count());

// A signal that will only be completed by a barrier waiting on `gate`, which nothing
// opens: a wait on it can only end by a reset.
struct PendingWork {
    jal::runtime::Signal gate;
    jal::runtime::Signal done;
    PendingWork(const jal::runtime::Device& dev, jal::runtime::Queue& queue)
        : gate(dev, 1), done(dev, 1)
    {
        const jal::runtime::Signal* deps[] = {&gate};
        queue.barrier_and(deps, &done);
    }
};

// How a wait ended, and when (the tests record how long after the reset was asked for:
// docs/userlib.md promises within a second, a figure no test asserts on a shared machine).
struct Woken {
    jal_status_t status;
    std::chrono::steady_clock::time_point at;
};

std::future<Woken> wait_in_thread(const jal::runtime::Signal& s, jal_wait_mode mode)
{
    return std::async(std::launch::async, [handle = s.get(), mode] {
        const jal_status_t st =
            jal_signal_wait(handle, JAL_SIGNAL_EQ, 0, JAL_TIMEOUT_INFINITE, mode, nullptr, nullptr);
        return Woken{st, std::chrono::steady_clock::now()};
    });
}

int ms_since(std::chrono::steady_clock::time_point from, const Woken& w)
{
    return static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(w.at - from).count());
}

class DeviceResetTest : public jal::test::EmuTest {
protected:
    jal::test::EmuOptions emu_options() const override
    {
        jal::test::EmuOptions o;
        o.extra_args = {"--fw", "native"};
        return o;
    }

    CommandResult jalctl(std::vector<std::string> args)
    {
        args.insert(args.begin(), jal::test::bin_path("jalctl"));
        return jal::test::run_command(args, {emu().env()});
    }

    // After a reset: the old device's handles fail with DEVICE_RESET, and a re-opened
    // device copies data to the chip and back.
    void expect_stale_then_reopen(jal::runtime::Device& old_dev, jal::runtime::Context& old_ctx,
                                  jal::runtime::Queue& old_queue, jal::runtime::Signal& old_sig);
};

void expect_device_reset(jal_status_t st)
{
    EXPECT_EQ(st, JAL_STATUS_DEVICE_RESET)
        << jal_status_string(st) << ": " << jal_last_error_message();
}

void DeviceResetTest::expect_stale_then_reopen(jal::runtime::Device& old_dev,
                                               jal::runtime::Context& old_ctx,
                                               jal::runtime::Queue& old_queue,
                                               jal::runtime::Signal& old_sig)
{
    expect_device_reset(jal_queue_nop(old_queue.get(), nullptr));
    expect_device_reset(jal_signal_store(old_sig.get(), 0));
    jal_mem_t mem = nullptr;
    expect_device_reset(jal_mem_alloc(old_ctx.get(), 1 << 20, JAL_PLACE_SLICE, 1, 0, &mem));
    jal_context_t ctx = nullptr;
    expect_device_reset(jal_context_create(old_dev.get(), &ctx));
    jal_identify id{};
    jal_status_t st = jal_device_identify(old_dev.get(), &id);
    expect_device_reset(st);
    std::string message = jal_last_error_message();
    EXPECT_EQ(message.find("timed out"), std::string::npos) << message;
    EXPECT_NE(message.find("reset"), std::string::npos) << message;
    try {
        old_queue.nop();
        ADD_FAILURE() << "a queue of the reset device took a packet";
    } catch (const jal::Error& e) {
        EXPECT_TRUE(e.device_reset()) << e.what();
    }

    jal::runtime::Device dev(0, emu().socket_dir());
    jal::runtime::Context ctx2(dev);
    jal::runtime::Queue queue(ctx2, 64);
    jal::runtime::Memory memory(ctx2, 1 << 20, JAL_PLACE_SLICE, 1);
    jal::runtime::HostBuffer in(dev, 4096), out(dev, 4096);
    for (size_t i = 0; i < in.size(); i++) in.data()[i] = static_cast<std::byte>(i * 7 + 3);
    jal::runtime::Signal copied(dev, 2);
    queue.copy_to_device(memory.va(), in, 0, in.size(), &copied);
    queue.copy_to_host(out, 0, memory.va(), out.size(), &copied);
    jal::runtime::WaitResult r = copied.wait_zero(kWaitBound);
    ASSERT_TRUE(r.satisfied);
    EXPECT_EQ(r.status, JAL_STATUS_OK);
    EXPECT_EQ(std::memcmp(in.data(), out.data(), in.size()), 0);
}

TEST_F(DeviceResetTest, JalctlResetRefusesThenForceWakesWaitersWithDeviceReset)
{
    jal::runtime::Device dev(0, emu().socket_dir());
    jal::runtime::Context ctx(dev);
    jal::runtime::Queue queue(ctx, 64);
    PendingWork sleeping(dev, queue), spinning(dev, queue);
    auto by_interrupt = wait_in_thread(sleeping.done, JAL_WAIT_INTERRUPT);
    auto by_polling = wait_in_thread(spinning.done, JAL_WAIT_POLL);

    CommandResult refused = jalctl({"reset"});
    EXPECT_EQ(refused.exit_code, 3) << refused.out << refused.err;
    EXPECT_NE(refused.out.find("refusing to reset"), std::string::npos) << refused.out;
    EXPECT_NE(refused.out.find(std::to_string(::getpid())), std::string::npos) << refused.out;
    // The process name as the kernel keeps it (15 characters of the test binary's name).
    EXPECT_NE(refused.out.find("device_reset_in"), std::string::npos) << refused.out;

    CommandResult refused_json = jalctl({"reset", "--json"});
    EXPECT_EQ(refused_json.exit_code, 3) << refused_json.err;
    json doc = json::parse(refused_json.out);
    EXPECT_EQ(doc["refused"], true);
    ASSERT_EQ(doc["clients"].size(), 1u) << refused_json.out;
    EXPECT_EQ(doc["clients"][0]["pid"], ::getpid());
    EXPECT_EQ(doc["clients"][0]["contexts"], 1);
    // Refusing touched nothing: the waits are still pending.
    EXPECT_EQ(by_interrupt.wait_for(0s), std::future_status::timeout);

    const auto asked = std::chrono::steady_clock::now();
    CommandResult forced = jalctl({"reset", "--force", "--json", "--timeout", kBootWait});
    EXPECT_EQ(forced.exit_code, 0) << forced.out << forced.err;
    json reset = json::parse(forced.out);
    EXPECT_EQ(reset["came_back"], true);
    EXPECT_EQ(reset["forced"], true);
    EXPECT_EQ(reset["clients"].size(), 1u);

    ASSERT_EQ(by_interrupt.wait_for(kWaitBound), std::future_status::ready);
    ASSERT_EQ(by_polling.wait_for(kWaitBound), std::future_status::ready);
    const Woken slept = by_interrupt.get(), polled = by_polling.get();
    expect_device_reset(slept.status);
    expect_device_reset(polled.status);
    RecordProperty("interrupt_wait_woke_ms", ms_since(asked, slept));
    RecordProperty("polling_wait_woke_ms", ms_since(asked, polled));
    RecordProperty("jalctl_reset_ms", static_cast<int>(reset["elapsed_s"].get<double>() * 1000));
    expect_stale_then_reopen(dev, ctx, queue, sleeping.gate);

    // Releasing the old handles succeeds (the queue still in the context is reported as
    // left in it, as always); the device is closed with them.
    EXPECT_NO_THROW(ctx.destroy());
}

TEST_F(DeviceResetTest, WatchdogResetWakesAPendingWait)
{
    jal::runtime::Device dev(0, emu().socket_dir());
    jal::runtime::Context ctx(dev);
    jal::runtime::Queue queue(ctx, 64);
    PendingWork pending(dev, queue);
    auto waiter = wait_in_thread(pending.done, JAL_WAIT_HYBRID);

    // Another client hangs the firmware; its watchdog resets the management core.
    jal::ChipFunction other = open_ready();
    jal_admin_sqe hang{};
    hang.opcode = JAL_ADMIN_DEBUG_FAULT;
    hang.cdw[0] = JAL_DEBUG_FAULT_HANG_MAIN_LOOP;
    const auto asked = std::chrono::steady_clock::now();
    other.admin_submit_raw(hang);

    ASSERT_EQ(waiter.wait_for(kWaitBound), std::future_status::ready);
    const Woken woken = waiter.get();
    expect_device_reset(woken.status);
    // From the hang, so the firmware watchdog's own timeout is in it.
    RecordProperty("hybrid_wait_woke_ms", ms_since(asked, woken));
    ASSERT_EQ(other.wait_ready(jal::test::kBootTimeout).state, jal::DeviceState::ready);
    expect_stale_then_reopen(dev, ctx, queue, pending.gate);
}

TEST_F(DeviceResetTest, JalctlResetWithoutOtherClientsNeedsNoForce)
{
    {
        jal::ChipFunction booted = open_ready();
    }  // the first boot is done (its events logged) before the reset, and nothing is attached
    CommandResult r = jalctl({"reset", "--json", "--timeout", kBootWait});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    json doc = json::parse(r.out);
    EXPECT_EQ(doc["refused"], false);
    EXPECT_EQ(doc["clients"].size(), 0u);

    // A warm reset keeps the previous boot's last events: its end comes before the new
    // boot's start, whose cause is the host (jalctl's reset register).
    jal::ChipFunction dev = open_ready();
    const jal::EventLog log = dev.event_log();
    const auto new_boot =
        std::find_if(log.events.begin(), log.events.end(), [](const jal_log_event& e) {
            return e.code == JAL_EVENT_BOOT_START && e.args[0] == JAL_RESET_CAUSE_HOST;
        });
    ASSERT_NE(new_boot, log.events.end());
    EXPECT_EQ(new_boot->args[1], dev.identify().boot_count);
    const auto old_done = std::find_if(log.events.begin(), new_boot, [](const jal_log_event& e) {
        return e.code == JAL_EVENT_BOOT_DONE;
    });
    EXPECT_NE(old_done, new_boot) << "the previous boot's events are gone";
}

class FailedChipTest : public jal::test::EmuTest {
protected:
    jal::test::EmuOptions emu_options() const override
    {
        jal::test::EmuOptions o;
        o.fail_slices = "0,1,2,3,4,5,6,7,8,9";  // fewer than JAL_MIN_GOOD_SLICES survive
        o.extra_args = {"--fw", "native"};
        return o;
    }
};

TEST_F(FailedChipTest, OpeningAFailedChipSaysItFailedNotThatItTimedOut)
{
    jal::ChipFunction probe = jal::ChipFunction::open(0, emu().open_options());
    ASSERT_EQ(probe.wait_ready(jal::test::kBootTimeout).state, jal::DeviceState::failed);

    jal_open_options_t o{};
    o.struct_size = sizeof o;
    std::string dir = emu().socket_dir();
    o.emu_dir = dir.c_str();
    jal_device_t dev = nullptr;
    EXPECT_EQ(jal_device_open(0, &o, &dev), JAL_STATUS_HW_FAILED);
    std::string message = jal_last_error_message();
    EXPECT_NE(message.find("the chip failed (fault: hardware failed"), std::string::npos)
        << message;
    EXPECT_EQ(message.find("30000"), std::string::npos) << message;
}

}  // namespace
