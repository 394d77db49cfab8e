// libjal's jal::ChipFunction against a real jal-emu: boot, identity, harvesting, malformed
// admin commands, clients that vanish mid-command, logs, power limit, reset.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <jal/chip_function.hpp>
#include <jal/hw/chip.h>

#include "fixture/emu_process.hpp"

namespace {

using namespace std::chrono_literals;
using jal::test::EmuOptions;
using jal::test::EmuTest;

constexpr uint64_t kGiB = 1ull << 30;

jal_admin_sqe sqe_of(uint8_t opcode, uint32_t data_len = 0)
{
    jal_admin_sqe sqe{};
    sqe.opcode = opcode;
    sqe.data_len = data_len;
    return sqe;
}

class DeviceTest : public EmuTest {};

TEST_F(DeviceTest, BootsWithTheFullChip)
{
    jal::ChipFunction dev = open_ready();
    jal::DeviceStatus s = dev.status();
    EXPECT_EQ(s.state, jal::DeviceState::ready);
    EXPECT_FALSE(s.degraded);
    jal_identify id = dev.identify();
    EXPECT_EQ(id.state, uint32_t{JAL_CHIP_STATE_READY});
    EXPECT_EQ(id.slices_total, 64u);
    EXPECT_EQ(id.slices_enabled, 64u);
    EXPECT_EQ(id.slices_enabled_mask, ~0ull);
    EXPECT_EQ(id.hbm_channels_total, 192u);
    EXPECT_EQ(id.hbm_channels_ok, 192u);
    EXPECT_EQ(id.hbm_bytes_total, 216 * kGiB);
    EXPECT_EQ(id.hbm_bytes_usable, 216 * kGiB);
    EXPECT_GE(id.boot_count, 1u);
    EXPECT_NE(id.model[0], '\0');
}

TEST_F(DeviceTest, SliceMapAndHbmReportOfAFullChip)
{
    jal::ChipFunction dev = open_ready();
    jal_slice_map map = dev.slice_map();
    EXPECT_EQ(map.num_slices, 64u);
    EXPECT_EQ(map.num_enabled, 64u);
    for (uint32_t s = 0; s < 64; s++) {
        EXPECT_EQ(map.slices[s].state, JAL_SLICE_ENABLED) << "slice " << s;
        EXPECT_EQ(map.slices[s].logical_id, s);
        EXPECT_EQ(map.slices[s].channels_ok, 3u);
    }
    jal::HbmReport hbm = dev.hbm_report(0, JAL_HBM_CHANNELS);
    EXPECT_EQ(hbm.header.channels_ok, 192u);
    ASSERT_EQ(hbm.channels.size(), 192u);
    EXPECT_EQ(hbm.channels[100].stack, 100 / JAL_HBM_CHANNELS_PER_STACK);
    jal::HbmReport one = dev.hbm_report(191, 1);
    ASSERT_EQ(one.channels.size(), 1u);
    EXPECT_EQ(one.header.first_channel, 191u);
}

class HarvestedDeviceTest : public EmuTest {
    EmuOptions emu_options() const override
    {
        EmuOptions o;
        o.fuse_slices = "3,17";
        o.fail_slices = "40";
        return o;
    }
};

TEST_F(HarvestedDeviceTest, FusedAndFailedSlicesVanishFromTheHostView)
{
    jal::ChipFunction dev = open_ready();
    EXPECT_TRUE(dev.status().degraded);
    jal_identify id = dev.identify();
    EXPECT_EQ(id.slices_enabled, 61u);
    EXPECT_EQ(id.hbm_bytes_usable, 61 * JAL_HBM_SLICE_BYTES);
    jal_slice_map map = dev.slice_map();
    EXPECT_EQ(map.num_enabled, 61u);
    EXPECT_EQ(map.slices[3].state, JAL_SLICE_FUSED);
    EXPECT_EQ(map.slices[17].state, JAL_SLICE_FUSED);
    EXPECT_EQ(map.slices[40].state, JAL_SLICE_FAILED_BIST);
    EXPECT_EQ(map.slices[40].logical_id, 0xff);
    EXPECT_EQ(map.fused_mask, (1ull << 3) | (1ull << 17));
    EXPECT_EQ(map.failed_mask, 1ull << 40);
    // Logical ids are dense over the enabled slices.
    EXPECT_EQ(map.slices[4].logical_id, 3u);
    EXPECT_EQ(map.logical_to_physical[3], 4u);
    EXPECT_EQ(map.logical_to_physical[60], 63u);
    EXPECT_EQ(map.logical_to_physical[61], 0xff);
}

TEST_F(DeviceTest, MalformedAdminCommandsFailAndTheNextOneWorks)
{
    jal::ChipFunction dev = open_ready();
    auto expect_status = [&](jal_admin_sqe sqe, size_t buffer, jal_status want, const char* what) {
        jal::RawAdminResult r = dev.admin_execute_raw(sqe, buffer);
        EXPECT_EQ(r.completion.status, want)
            << what << ": got " << jal_status_name(r.completion.status);
        // The queue keeps working after every rejected command.
        EXPECT_EQ(dev.identify().slices_total, 64u) << "after " << what;
    };
    expect_status(sqe_of(0x42), 0, JAL_STATUS_INVALID_OPCODE, "unknown opcode");
    expect_status(sqe_of(JAL_ADMIN_IDENTIFY, 16), 4096, JAL_STATUS_INVALID_LENGTH,
                  "IDENTIFY into 16 bytes");
    expect_status(sqe_of(JAL_ADMIN_IDENTIFY, JAL_ADMIN_DATA_MAX + 4096), 4096,
                  JAL_STATUS_INVALID_LENGTH, "data_len over the maximum");

    jal_admin_sqe unmapped = sqe_of(JAL_ADMIN_IDENTIFY, sizeof(jal_identify));
    unmapped.data_addr = 0xdead'0000'0000ull;  // inside no shared region
    expect_status(unmapped, 0, JAL_STATUS_DMA_FAULT, "data address outside shared memory");

    jal_admin_sqe nonzero_flags = sqe_of(JAL_ADMIN_IDENTIFY, sizeof(jal_identify));
    nonzero_flags.flags = 1;
    expect_status(nonzero_flags, 4096, JAL_STATUS_INVALID_FIELD, "nonzero flags");

    jal_admin_sqe bad_log = sqe_of(JAL_ADMIN_GET_LOG, 4096);
    bad_log.cdw[0] = 99;
    expect_status(bad_log, 4096, JAL_STATUS_INVALID_FIELD, "unknown log id");
}

TEST_F(DeviceTest, AdminErrorsBecomeExceptionsThatNameTheCommand)
{
    jal::ChipFunction dev = open_ready();
    try {
        dev.hbm_report(500, 1);
        FAIL() << "channel 500 does not exist";
    } catch (const jal::Error& e) {
        EXPECT_NE(e.status(), JAL_STATUS_OK);
        EXPECT_NE(std::string(e.what()).find("device 0: admin command GET_HBM_REPORT failed: "),
                  std::string::npos)
            << e.what();
    }
}

TEST_F(DeviceTest, ClientsThatVanishMidCommandLeaveTheEmulatorHealthy)
{
    // More vanishing clients than the chip has host functions: each must be reclaimed.
    for (int round = 0; round < 10; round++) {
        pid_t child = ::fork();
        ASSERT_GE(child, 0);
        if (child == 0) {
            try {
                jal::ChipFunction dev = jal::ChipFunction::open(0, emu().open_options());
                dev.wait_ready(jal::test::kBootTimeout);
                for (int i = 0; i < 8; i++)
                    dev.admin_submit_raw(sqe_of(JAL_ADMIN_GET_HBM_REPORT, 32 + 192 * 576),
                                         32 + 192 * 576);
            } catch (...) {
                ::_exit(2);
            }
            ::_exit(0);  // no waiting, no cleanup: the connection just drops
        }
        int status = 0;
        ASSERT_EQ(::waitpid(child, &status, 0), child);
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0)
            << "child in round " << round << " failed";
    }
    jal::ChipFunction dev = open_ready();
    EXPECT_EQ(dev.identify().slices_enabled, 64u);
    EXPECT_GT(dev.telemetry().admin_commands, 0u);
}

TEST_F(DeviceTest, TelemetryIsPlausible)
{
    jal::ChipFunction dev = open_ready();
    jal_identify id = dev.identify();
    jal_telemetry t = dev.telemetry();
    EXPECT_GT(t.power_mw, 0u);
    EXPECT_GE(t.clock_mhz, id.clock_min_mhz);
    EXPECT_LE(t.clock_mhz, id.clock_max_mhz);
    EXPECT_GT(t.temp_junction_mc, 0);
    EXPECT_STRNE(jal_limiter_name(t.limiter), "unknown");
    jal_telemetry later = dev.telemetry();
    EXPECT_GE(later.timestamp_us, t.timestamp_us);
}

TEST_F(DeviceTest, PowerLimitRoundTrips)
{
    jal::ChipFunction dev = open_ready();
    jal_identify id = dev.identify();
    EXPECT_EQ(dev.power_limit_mw(), id.power_limit_mw);
    EXPECT_EQ(dev.set_power_limit_mw(400000), 400000u);
    EXPECT_EQ(dev.power_limit_mw(), 400000u);
    EXPECT_EQ(dev.identify().power_limit_mw, 400000u);
}

TEST_F(DeviceTest, EventLogPagesAndPostTrail)
{
    jal::ChipFunction dev = open_ready();
    jal::EventLog log = dev.event_log();
    ASSERT_FALSE(log.events.empty());
    for (size_t i = 1; i < log.events.size(); i++)
        EXPECT_GT(log.events[i].seq, log.events[i - 1].seq);
    EXPECT_GE(log.next_seq, log.events.back().seq + 1);
    jal::EventLog newer = dev.event_log(log.next_seq);
    for (const auto& e : newer.events) EXPECT_GE(e.seq, log.next_seq);
    jal::PostTrail trail = dev.post_trail();
    ASSERT_FALSE(trail.entries.empty());
    for (const auto& p : trail.entries)
        EXPECT_EQ(p.status, uint32_t{JAL_STATUS_OK}) << "step " << p.step;
}

TEST_F(DeviceTest, ResetComesBackAndIsReportedTruthfully)
{
    jal::ChipFunction dev = open_ready();
    uint32_t boots = dev.identify().boot_count;
    int progress_calls = 0;
    jal::ResetOutcome out = dev.reset(jal::ResetMethod::reset_register, jal::test::kBootTimeout,
                                      [&](const jal::ResetProgress&) { progress_calls++; });
    EXPECT_TRUE(out.reset_observed);
    EXPECT_TRUE(out.came_back) << jal::state_name(out.status.state);
    EXPECT_GT(progress_calls, 0);
    EXPECT_EQ(dev.identify().boot_count, boots + 1);

    out = dev.reset(jal::ResetMethod::admin_command, jal::test::kBootTimeout);
    EXPECT_TRUE(out.came_back);
    EXPECT_EQ(dev.identify().boot_count, boots + 2);
}

TEST_F(DeviceTest, ConcurrentCallersShareOneDevice)
{
    jal::ChipFunction dev = open_ready();
    std::vector<std::thread> threads;
    std::atomic<int> failures{0};
    for (int t = 0; t < 4; t++)
        threads.emplace_back([&, t] {
            for (int i = 0; i < 20; i++) {
                try {
                    if (t % 2 ? dev.identify().slices_total != 64 : dev.telemetry().clock_mhz == 0)
                        failures++;
                } catch (const jal::Error&) {
                    failures++;
                }
            }
        });
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures.load(), 0);
}

TEST_F(DeviceTest, HungFirmwareTimesOutWithAClearErrorNeverAHang)
{
    jal::ChipFunction ready = open_ready();
    jal::OpenOptions options = emu().open_options();
    options.admin_timeout = 2s;
    jal::ChipFunction dev = jal::ChipFunction::open(0, options);
    jal_admin_sqe hang = sqe_of(JAL_ADMIN_DEBUG_FAULT);
    hang.cdw[0] = JAL_DEBUG_FAULT_HANG_MAIN_LOOP;
    dev.admin_submit_raw(hang);  // the firmware may hang before it completes this

    auto start = std::chrono::steady_clock::now();
    bool failed = false;
    try {
        dev.identify();
    } catch (const jal::Error& e) {
        failed = true;
        // Hung until the deadline, or the watchdog reset the core first: then the error
        // says so instead of waiting out the timeout (RESET_GENERATION moved).
        if (e.status() == JAL_STATUS_DEVICE_RESET)
            EXPECT_EQ(std::string(e.what()).rfind(
                          "device 0: admin command IDENTIFY lost: the device was reset while it "
                          "was in flight",
                          0),
                      0u)
                << e.what();
        else
            EXPECT_STREQ(e.what(),
                         "device 0: admin command IDENTIFY timed out after 2 s without progress");
    }
    EXPECT_TRUE(failed) << "IDENTIFY answered by a hung firmware";
    EXPECT_LT(std::chrono::steady_clock::now() - start, 10s);

    // The watchdog reboots the management core; the library re-enables its queue.
    bool recovered = false;
    for (int attempt = 0; attempt < 15 && !recovered; attempt++) {
        try {
            dev.wait_ready(jal::test::kBootTimeout);
            recovered = dev.identify().slices_total == 64;
        } catch (const jal::Error&) {}
    }
    EXPECT_TRUE(recovered);
}

TEST_F(DeviceTest, ClientsBeyondTheHostFunctionsAreRefusedClearly)
{
    std::vector<jal::ChipFunction> clients;
    try {
        for (int i = 0; i < 64; i++)
            clients.push_back(jal::ChipFunction::open(0, emu().open_options()));
        FAIL() << "64 clients attached to one chip";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_BUSY);
        EXPECT_NE(std::string(e.what()).find("every host function of the chip is in use"),
                  std::string::npos)
            << e.what();
    }
    EXPECT_FALSE(clients.empty());
    clients.pop_back();  // a function comes free once the emulator notices the hang-up
    bool reopened = false;
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (!reopened && std::chrono::steady_clock::now() < deadline) {
        try {
            jal::ChipFunction::open(0, emu().open_options());
            reopened = true;
        } catch (const jal::Error& e) {
            ASSERT_EQ(e.status(), JAL_STATUS_BUSY) << e.what();
            std::this_thread::yield();  // each attempt is a round trip to the emulator
        }
    }
    EXPECT_TRUE(reopened);
}

class MultiChipTest : public EmuTest {
    EmuOptions emu_options() const override
    {
        EmuOptions o;
        o.chips = 2;
        return o;
    }
};

TEST_F(MultiChipTest, EveryChipIsEnumeratedAndOpens)
{
    auto found = jal::ChipFunction::enumerate(emu().socket_dir());
    ASSERT_EQ(found.size(), 2u);
    EXPECT_EQ(found[1].index, 1u);
    jal::ChipFunction second = open_ready(1);
    EXPECT_EQ(second.identify().chip_index, 1u);
}

}  // namespace
