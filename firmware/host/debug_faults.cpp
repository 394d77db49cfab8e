#include "firmware/host/debug_faults.hpp"

#include "firmware/hal/hal.hpp"
#include "firmware/host/admin_resources.hpp"
#include "firmware/host/event_codes.hpp"
#include "firmware/memory/page_allocator.hpp"
#include "jal/hw/events.h"
#include "jal/hw/mgmt.h"
#include "jal/hw/regs.h"
#include "jal/hw/status.h"

namespace jal::fw::host {

namespace {

// The physical slice of logical slice `logical` (the logical-th enabled one), or 64.
std::uint32_t physical_slice(std::uint64_t enabled, std::uint32_t logical)
{
    for (std::uint32_t p = 0; p < JAL_NUM_SLICES; ++p) {
        if (!((enabled >> p) & 1)) continue;
        if (logical-- == 0) return p;
    }
    return JAL_NUM_SLICES;
}

std::uint32_t apply(std::uint32_t kind, const DebugFaults::Args& args)
{
    hal::write32(JAL_FAULT_KIND, kind);
    for (std::uint32_t i = 0; i < JAL_FAULT_ARGS; ++i) hal::write32(JAL_FAULT_ARG(i), args[i]);
    hal::write32(JAL_FAULT_CTRL, JAL_FAULT_GO);
    return hal::read32(JAL_FAULT_STATUS);
}

AfterAction after(std::uint32_t kind)
{
    if (kind == JAL_DEBUG_FAULT_HANG_MAIN_LOOP) return AfterAction::kHangMainLoop;
    if (kind == JAL_DEBUG_FAULT_CRASH) return AfterAction::kCrash;
    return AfterAction::kNone;
}

}  // namespace

Completion DebugFaults::inject(std::uint32_t by, std::uint32_t kind, const Args& args)
{
    if (kind == 0 || kind >= JAL_DEBUG_FAULT_COUNT) return Completion{0, JAL_STATUS_INVALID_FIELD};
    Args hw = args;
    if (kind == JAL_DEBUG_FAULT_SLICE_FAIL || kind == JAL_DEBUG_FAULT_SLICE_HANG) {
        hw[0] = physical_slice(slices_.enabled(), args[0]);
        if (args[0] >= JAL_NUM_SLICES || hw[0] >= JAL_NUM_SLICES)
            return Completion{0, JAL_STATUS_OUT_OF_RANGE};
    }
    const std::uint32_t status = apply(kind, hw);
    if (status != JAL_STATUS_OK) return Completion{0, status};
    journal_.event(JAL_SRC_ADMIN, JAL_SEV_WARN, kEvDebugFault, "debug: fault injected",
                   {kind, args[0], args[1], by});
    if (kind == JAL_DEBUG_FAULT_HBM_LANE) retrain(args[0]);
    if (kind == JAL_DEBUG_FAULT_LINK_LANE && links_) (void)links_->retrain(args[0]);
    if (kind == JAL_DEBUG_FAULT_ECC_UNCORRECTED) retire_page(args[0], args[1]);
    return Completion{0, JAL_STATUS_OK, after(kind)};
}

AfterAction DebugFaults::take_console_requests()
{
    for (;;) {
        const std::uint32_t kind = hal::read32(JAL_FAULT_REQ_KIND);
        if (kind == 0) return AfterAction::kNone;
        Args args{};
        for (std::uint32_t i = 0; i < JAL_FAULT_ARGS; ++i)
            args[i] = hal::read32(JAL_FAULT_REQ_ARG(i));
        hal::write32(JAL_FAULT_REQ_TAKE, 1);
        const Completion c = inject(JAL_FAULT_BY_CONSOLE, kind, args);
        if (c.status != JAL_STATUS_OK)
            journal_.event(JAL_SRC_ADMIN, JAL_SEV_WARN, kEvAdminCommandError,
                           "debug: console fault refused",
                           {JAL_FAULT_BY_CONSOLE, JAL_ADMIN_DEBUG_FAULT, c.status, 0});
        if (c.after != AfterAction::kNone) return c.after;
    }
}

// A lane died under a channel in service: train it again. A spare takes the lane's place
// (REPAIRED), or the channel fails and leaves service with its pages (the host sees the
// capacity drop in IDENTIFY and GET_USAGE; allocations on it go away as they are freed).
void DebugFaults::retrain(std::uint32_t channel)
{
    if (!hbm_.channels[channel].usable()) return;
    trainer_.train_channel(channel);
    if (hbm_.channels[channel].usable()) return;
    (void)resources_.memory().retire_channel(channel);
    const std::uint32_t slice = jal_slice_of_channel(channel);
    slices_.set_channels_ok(slice, static_cast<std::uint8_t>(hbm_.usable_in_slice(slice)));
    // Capacity is gone: the chip is degraded from now on, as after a failed boot training.
    hal::write32(JAL_HOSTIF_STATUS, hal::read32(JAL_HOSTIF_STATUS) | JAL_REG_STATUS_DEGRADED);
}

// The poisoned page leaves service: at once when free, when its allocation is freed
// otherwise. Reads of it fail ECC_UNCORRECTED until then.
void DebugFaults::retire_page(std::uint32_t channel, std::uint32_t page)
{
    const std::uint64_t phys = jal_hbm_channel_base(channel) + std::uint64_t{page} * JAL_PAGE_SIZE;
    const bool in_use = !resources_.memory().pages().is_free(phys);
    if (!resources_.memory().retire_page(phys)) return;  // not in service, or already retired
    hbm_.count_retired(channel);
    journal_.event(JAL_SRC_HBM, JAL_SEV_ERROR, kEvPageRetired, "hbm page retired",
                   {channel, page, in_use ? 1u : 0u, hbm_.retired_total});
}

}  // namespace jal::fw::host
