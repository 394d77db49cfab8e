#include "firmware.hpp"

#include "hal/hal.hpp"
#include "host/admin_firmware.hpp"
#include "host/event_codes.hpp"
#include "jal/hw/mgmt.h"
#include "jal/hw/regs.h"
#include "jal/hw/status.h"
#include "jal/hw/version.h"
#include "sys/watchdog.hpp"
#include "util/mask64.hpp"
#include "util/text.hpp"
#include "version.hpp"

namespace jal::fw {

static_assert(Firmware::kCaps == (JAL_CAP_ADMIN_QUEUE | JAL_CAP_MSIX));

// The boot sequence, in one place. POST codes are what the host sees in JAL_REG_POST_CODE
// while a step runs (and in the POST trail afterwards).
const std::array<boot::BootStep<Firmware>, 11> Firmware::kBootTable = {{
    {0x10, "hostif init", true, [](Firmware& f) { return f.step_hostif_init(); }},
    {0x20, "watchdog arm", true, [](Firmware& f) { return f.step_watchdog_arm(); }},
    {0x30, "power init", true, [](Firmware& f) { return f.step_power_init(); }},
    {0x40, "slice reset release", true, [](Firmware& f) { return f.step_slice_reset(); }},
    {0x50, "slice bist", false, [](Firmware& f) { return f.step_slice_bist(); }},
    {0x60, "harvest", true, [](Firmware& f) { return f.step_harvest(); }},
    {0x70, "hbm training", false, [](Firmware& f) { return f.step_hbm_training(); }},
    {0x80, "capacity reconcile", true, [](Firmware& f) { return f.step_capacity_reconcile(); }},
    {0x90, "power manager start", true, [](Firmware& f) { return f.step_power_start(); }},
    {0x98, "link training", false, [](Firmware& f) { return f.step_link_training(); }},
    {0xa0, "ready", true, [](Firmware& f) { return f.step_ready(); }},
}};

Firmware::Firmware() = default;

std::uint32_t Firmware::step_hostif_init()
{
    // The bus must answer with the peripheral block's magic before anything else is trusted.
    if (hal::read32(JAL_SYS_ID) != JAL_SYS_ID_MAGIC) return JAL_STATUS_HW_FAILED;
    return JAL_STATUS_OK;
}

std::uint32_t Firmware::step_watchdog_arm()
{
    sys::watchdog_arm();
    return hal::read32(JAL_WDT_CTRL) & 1 ? JAL_STATUS_OK : JAL_STATUS_HW_FAILED;
}

std::uint32_t Firmware::step_power_init()
{
    return power_.init_safe();
}
std::uint32_t Firmware::step_slice_reset()
{
    return slices_.release_resets();
}
std::uint32_t Firmware::step_slice_bist()
{
    return slices_.run_bist();
}

std::uint32_t Firmware::step_harvest()
{
    const std::uint32_t status = slices_.harvest();
    journal_.event(JAL_SRC_SLICE, JAL_SEV_INFO, host::kEvSliceHarvest, "slices harvested",
                   {slices_.enabled_count(), util::popcount64(slices_.fused()),
                    util::popcount64(slices_.bist_failed()),
                    util::popcount64(slices_.bist_timeout())});
    if (status != JAL_STATUS_OK)
        journal_.event(JAL_SRC_SLICE, JAL_SEV_FATAL, host::kEvSliceTooFew, "too few good slices",
                       {slices_.enabled_count(), JAL_MIN_GOOD_SLICES});
    return status;
}

std::uint32_t Firmware::step_hbm_training()
{
    trainer_.train_all(slices_.enabled());
    return hbm_.usable_count() ? JAL_STATUS_OK : JAL_STATUS_HW_FAILED;
}

std::uint32_t Firmware::step_capacity_reconcile()
{
    for (std::uint32_t s = 0; s < JAL_NUM_SLICES; ++s) {
        const std::uint32_t ok = hbm_.usable_in_slice(s);
        slices_.set_channels_ok(s, static_cast<std::uint8_t>(ok));
        if (ok == 0 && ((slices_.enabled() >> s) & 1)) {
            slices_.disable_no_memory(s);
            journal_.event(JAL_SRC_SLICE, JAL_SEV_WARN, host::kEvSliceNoMemory,
                           "slice without memory", {s});
        }
    }
    const std::uint32_t status = slices_.publish();
    if (status != JAL_STATUS_OK)
        journal_.event(JAL_SRC_SLICE, JAL_SEV_FATAL, host::kEvSliceTooFew, "too few good slices",
                       {slices_.enabled_count(), JAL_MIN_GOOD_SLICES});
    return status;
}

std::uint32_t Firmware::step_power_start()
{
    hal::write32(JAL_SYS_TICK_US, 1000);
    const std::uint32_t status = power_.start();
    power_.tick();
    return status;
}

std::uint32_t Firmware::step_link_training()
{
    return links_.train_all();
}

std::uint32_t Firmware::step_ready()
{
    resources_.init();  // device memory, MMU and queue engines start clean
    chip_.state = JAL_CHIP_STATE_READY;
    const bool degraded = slices_.degraded() || hbm_.count(JAL_HBM_CH_FAILED) != 0;
    hal::write32(JAL_HOSTIF_STATUS,
                 JAL_REG_STATUS_READY | (degraded ? JAL_REG_STATUS_DEGRADED : 0u));
    host::confirm_boot();  // a trial image is the good one from here on
    return JAL_STATUS_OK;
}

boot::BootOutcome Firmware::boot()
{
    chip_.boot_start_us = hal::now_us();
    hal::write32(JAL_HOSTIF_STATUS, JAL_REG_STATUS_BOOTING);
    hal::write32(JAL_HOSTIF_VERSION, JAL_HW_VERSION);
    hal::write32(JAL_HOSTIF_CAP, kCaps);
    hal::write32(JAL_HOSTIF_FW_VERSION, kFwVersion);
    chip_.chip_index = hal::read32(JAL_SYS_CHIP_INDEX);
    chip_.reset_cause = hal::read32(JAL_SYS_RESET_CAUSE);
    chip_.boot_count = hal::read32(JAL_SYS_BOOT_COUNT);
    const bool by_watchdog = chip_.reset_cause == JAL_RESET_CAUSE_WATCHDOG;
    // The previous boot's last events come back first, so the log tells what led here.
    (void)journal_.restore_retained();
    // The watchdog reset count lives in SYS (it survives the core resets that wipe SRAM).
    power_.set_boot_info(chip_.boot_start_us, hal::read32(JAL_SYS_WDT_RESETS));

    journal_.event(JAL_SRC_BOOT, JAL_SEV_INFO, host::kEvBootStart, kFwBuild,
                   {chip_.reset_cause, chip_.boot_count});
    if (by_watchdog)
        journal_.event(JAL_SRC_WATCHDOG, JAL_SEV_WARN, host::kEvWatchdogRecovery,
                       "watchdog recovery", {chip_.boot_count});

    const boot::BootOutcome out =
        boot::run_boot_table<Firmware>(kBootTable, *this, post_, journal_);
    if (out.failed) {
        chip_.state = JAL_CHIP_STATE_FAILED;
        hal::write32(JAL_HOSTIF_FAULT, out.fault);
        hal::write32(JAL_HOSTIF_STATUS, JAL_REG_STATUS_FAILED);
    }
    const std::uint32_t status = hal::read32(JAL_HOSTIF_STATUS);
    journal_.event(JAL_SRC_BOOT, out.failed ? JAL_SEV_FATAL : JAL_SEV_INFO, host::kEvBootDone,
                   out.failed ? "boot failed" : "boot done",
                   {status, out.fault, slices_.enabled_count(), hbm_.usable_count()});

    // The superloop starts by looking at every attached function: hosts may have written
    // their admin registers while the boot ran.
    const std::uint32_t present = hal::read32(JAL_HOSTIF_FUNC_PRESENT);
    queues_.set_present(present);
    resources_.functions_changed(present);
    return out;
}

void Firmware::fail_chip_thermal()
{
    chip_.state = JAL_CHIP_STATE_FAILED;
    hal::write32(JAL_HOSTIF_FAULT, JAL_STATUS_THERMAL_TRIP);
    hal::write32(JAL_HOSTIF_STATUS, JAL_REG_STATUS_FAILED);
}

host::AfterAction Firmware::poll_once()
{
    hal::wait_for_event();
    sys::watchdog_feed();
    const std::uint32_t ev = hal::read32(JAL_SYS_EVENTS);
    if (ev) hal::write32(JAL_SYS_EVENTS_CLEAR, ev);
    if (ev & JAL_EV_FUNC) {
        // A function that went away (or came back as a new client) leaves nothing behind.
        const std::uint32_t present = hal::read32(JAL_HOSTIF_FUNC_PRESENT);
        queues_.set_present(present);
        resources_.functions_changed(present);
    }
    if (ev & JAL_EV_HOST) {
        const std::uint32_t news = hal::read32(JAL_HOSTIF_FUNC_EVENTS);
        if (news) hal::write32(JAL_HOSTIF_FUNC_EVENTS, news);
        queues_.note_events(news);
    }
    if (ev & JAL_EV_FAULT) {
        const host::AfterAction a = faults_.take_console_requests();
        if (a != host::AfterAction::kNone) return a;
    }
    if (ev & JAL_EV_TICK) {
        power_.set_admin_commands(queues_.completed());
        power_.set_retired_pages(hbm_.retired_total);
        power_.tick();
        links_.tick();
        if (power_.tripped() && chip_.state != JAL_CHIP_STATE_FAILED) fail_chip_thermal();
    }
    const host::AfterAction after = queues_.service();
    power_.set_admin_commands(queues_.completed());
    return after;
}

void Firmware::reset_chip()
{
    journal_.event(JAL_SRC_ADMIN, JAL_SEV_WARN, host::kEvAdminReset, "chip reset requested", {});
    hal::write32(JAL_SYS_RESET_REQ, JAL_RESET_MAGIC);
    // The reset takes the core with it; until then do nothing (and feed nothing).
    for (;;) hal::wait_for_event();
}

void Firmware::hang_main_loop()
{
    journal_.event(JAL_SRC_ADMIN, JAL_SEV_WARN, host::kEvAdminHang, "debug: hanging main loop", {});
    // Deliberately spins without feeding the watchdog; reading the clock lets modelled time
    // advance so the watchdog can expire.
    for (;;) (void)hal::read32(JAL_SYS_NOW_US_LO);
}

void Firmware::crash()
{
    journal_.event(JAL_SRC_ADMIN, JAL_SEV_FATAL, host::kEvAdminHang, "debug: crashing", {});
    hal::crash();
}

void Firmware::run()
{
    (void)boot();
    for (;;) {
        switch (poll_once()) {
        case host::AfterAction::kResetChip:
            reset_chip();
        case host::AfterAction::kHangMainLoop:
            hang_main_loop();
        case host::AfterAction::kCrash:
            crash();
        case host::AfterAction::kNone:
            break;
        }
    }
}

}  // namespace jal::fw
