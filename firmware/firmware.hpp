// The management core's firmware: every piece of state lives in this object (several
// emulated chips run native firmware on different threads of one process, so there are no
// mutable globals). The emulator installs its NativeBus on the thread, then:
//
//     auto fw = std::make_unique<jal::fw::Firmware>();
//     fw->run();  // never returns; a reset unwinds it and starts a fresh object
//
// Tests drive the pieces instead: boot(), then poll_once() as often as they like.
#pragma once

#include <array>
#include <cstdint>

#include "boot/boot_table.hpp"
#include "boot/post_trail.hpp"
#include "hbm/hbm_state.hpp"
#include "hbm/trainer.hpp"
#include "host/admin_commands.hpp"
#include "host/admin_queues.hpp"
#include "host/admin_resources.hpp"
#include "host/chip_info.hpp"
#include "host/debug_faults.hpp"
#include "host/event_log.hpp"
#include "host/journal.hpp"
#include "links/link_manager.hpp"
#include "power/power_manager.hpp"
#include "slices/slice_manager.hpp"

namespace jal::fw {

class Firmware {
public:
    Firmware();
    Firmware(const Firmware&) = delete;
    Firmware& operator=(const Firmware&) = delete;

    // Boot table, then the superloop, forever.
    [[noreturn]] void run();

    // Runs the boot table and publishes READY / DEGRADED / FAILED. Idempotent only in the
    // sense that a test may call it once per object.
    boot::BootOutcome boot();
    // One superloop iteration: wait for an event, feed the watchdog, handle events and
    // admin queues. Returns what a completed command asked to happen next.
    host::AfterAction poll_once();

    // Read-only views for tests and the debug console.
    const host::ChipInfo& chip() const { return chip_; }
    const host::EventLog& events() const { return events_; }
    const boot::PostTrail& post_trail() const { return post_; }
    const slices::SliceManager& slices() const { return slices_; }
    const hbm::HbmState& hbm() const { return hbm_; }
    const power::PowerManager& power() const { return power_; }
    const links::LinkManager& links() const { return links_; }
    const host::AdminQueues& queues() const { return queues_; }
    const host::ResourceCommands& resources() const { return resources_; }

    static constexpr std::uint32_t kCaps =
        1u << 0 /* JAL_CAP_ADMIN_QUEUE */ | 1u << 2 /* JAL_CAP_MSIX */;

private:
    // Boot steps (see kBootTable in firmware.cpp for order and POST codes).
    std::uint32_t step_hostif_init();
    std::uint32_t step_watchdog_arm();
    std::uint32_t step_power_init();
    std::uint32_t step_slice_reset();
    std::uint32_t step_slice_bist();
    std::uint32_t step_harvest();
    std::uint32_t step_hbm_training();
    std::uint32_t step_capacity_reconcile();
    std::uint32_t step_power_start();
    std::uint32_t step_link_training();
    std::uint32_t step_ready();

    [[noreturn]] void reset_chip();
    // The power manager tripped: the chip is FAILED (fault THERMAL_TRIP) until reset.
    void fail_chip_thermal();
    [[noreturn]] void hang_main_loop();
    // An injected crash: a fault the core cannot return from (docs/reliability.md).
    [[noreturn]] void crash();

    static const std::array<boot::BootStep<Firmware>, 11> kBootTable;

    host::EventLog events_;
    host::Journal journal_{events_};
    boot::PostTrail post_;
    host::ChipInfo chip_;
    slices::SliceManager slices_;
    hbm::HbmState hbm_;
    hbm::Trainer trainer_{hbm_, journal_};
    power::PowerManager power_{slices_, journal_};
    links::LinkManager links_{journal_};
    host::ResourceCommands resources_{chip_, slices_, hbm_, journal_};
    host::DebugFaults faults_{slices_, hbm_, trainer_, resources_, journal_, &links_};
    host::AdminCommands commands_{host::AdminDeps{chip_, slices_, hbm_, power_, events_, post_},
                                  &resources_, &faults_, &links_};
    host::AdminQueues queues_{commands_, journal_};
};

}  // namespace jal::fw
