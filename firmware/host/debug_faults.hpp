// Faults injected at run time (admin DEBUG_FAULT, or a request the bring-up console queued
// on JAL_EV_FAULT): the firmware hands each to the emulator's fault injector (the FAULT
// registers), logs it with its arguments, and does what a production part does next:
// retrains a channel whose lane died (repaired with a spare, or taken out of service with
// its pages) or a fabric port whose lane died (up on fewer lanes, or down), retires a page an uncorrectable ECC error poisoned, crashes or hangs itself
// so that the watchdog recovers the core. Slice faults, ECC counts, temperature and load
// need nothing more from the firmware: the dispatch fails, the counters and the power
// manager show the rest.
#pragma once

#include <array>
#include <cstdint>

#include "firmware/hbm/hbm_state.hpp"
#include "firmware/hbm/trainer.hpp"
#include "firmware/host/admin_commands.hpp"
#include "firmware/host/journal.hpp"
#include "firmware/links/link_manager.hpp"
#include "firmware/slices/slice_manager.hpp"

namespace jal::fw::host {

class ResourceCommands;

class DebugFaults {
public:
    DebugFaults(slices::SliceManager& slices, hbm::HbmState& hbm, hbm::Trainer& trainer,
                ResourceCommands& resources, Journal& journal, links::LinkManager* links = nullptr)
        : slices_(slices), hbm_(hbm), trainer_(trainer), resources_(resources), journal_(journal),
          links_(links)
    {}

    using Args = std::array<std::uint32_t, 3>;
    // Injects fault `kind` (enum jal_debug_fault) for `by`: a host function, or
    // JAL_FAULT_BY_CONSOLE. Slices are logical, as the host numbers them.
    Completion inject(std::uint32_t by, std::uint32_t kind, const Args& args);
    // JAL_EV_FAULT: injects the console's queued requests, oldest first; stops at one that
    // crashes or hangs the firmware and returns that action.
    AfterAction take_console_requests();

private:
    void retrain(std::uint32_t channel);
    void retire_page(std::uint32_t channel, std::uint32_t page);

    slices::SliceManager& slices_;
    hbm::HbmState& hbm_;
    hbm::Trainer& trainer_;
    ResourceCommands& resources_;
    Journal& journal_;
    links::LinkManager* links_;
};

}  // namespace jal::fw::host
