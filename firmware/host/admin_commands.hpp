// Admin command handlers: validate one submission entry, execute it, produce the
// completion's result and status. Actions that must follow the completion (chip reset,
// debug hang) are returned, not performed, so the queue can post the completion first.
#pragma once

#include <array>
#include <cstdint>

#include "firmware/boot/post_trail.hpp"
#include "firmware/hbm/hbm_state.hpp"
#include "firmware/host/chip_info.hpp"
#include "firmware/host/event_log.hpp"
#include "firmware/host/reply_writer.hpp"
#include "firmware/links/link_manager.hpp"
#include "firmware/power/power_manager.hpp"
#include "firmware/slices/slice_manager.hpp"
#include "jal/hw/admin.h"

namespace jal::fw::host {

enum class AfterAction : std::uint8_t { kNone, kResetChip, kHangMainLoop, kCrash };

struct Completion {
    std::uint32_t result = 0;
    std::uint32_t status = 0;  // jal_status
    AfterAction after = AfterAction::kNone;
};

class ResourceCommands;  // contexts, memory, user queues (admin_resources.hpp)
class DebugFaults;       // DEBUG_FAULT beyond the main-loop hang (debug_faults.hpp)

struct AdminDeps {
    const ChipInfo& chip;
    const slices::SliceManager& slices;
    const hbm::HbmState& hbm;
    power::PowerManager& power;
    const EventLog& events;
    const boot::PostTrail& post;
};

class AdminCommands {
public:
    static constexpr std::uint32_t kStagingBytes = 4096;

    // Without `resources` the context, memory and queue commands answer UNSUPPORTED;
    // without `faults` DEBUG_FAULT knows only HANG_MAIN_LOOP; without `links`
    // GET_LINK_REPORT answers UNSUPPORTED.
    explicit AdminCommands(const AdminDeps& deps, ResourceCommands* resources = nullptr,
                           DebugFaults* faults = nullptr, const links::LinkManager* links = nullptr)
        : d_(deps), resources_(resources), faults_(faults), links_(links)
    {}

    Completion execute(std::uint32_t fn, const jal_admin_sqe& sqe);

    // Capacity of trained channels behind enabled slices (identify, docs).
    std::uint64_t hbm_bytes_usable() const;

private:
    Completion identify(ReplyWriter& out);
    Completion get_feature(const jal_admin_sqe& sqe);
    Completion set_feature(const jal_admin_sqe& sqe);
    Completion telemetry(ReplyWriter& out);
    Completion get_log(const jal_admin_sqe& sqe, ReplyWriter& out);
    Completion slice_map(ReplyWriter& out);
    Completion hbm_report(const jal_admin_sqe& sqe, ReplyWriter& out);
    Completion link_report(const jal_admin_sqe& sqe, ReplyWriter& out);
    Completion debug_fault(std::uint32_t fn, const jal_admin_sqe& sqe);

    AdminDeps d_;
    ResourceCommands* resources_;
    DebugFaults* faults_;
    const links::LinkManager* links_;
    std::array<std::uint8_t, kStagingBytes> staging_{};
};

}  // namespace jal::fw::host
