#include "emu/chip/fault_injector.hpp"

#include "emu/chip/chip.hpp"
#include "emu/util/log.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/events.h"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

namespace jal::emu {

namespace {
constexpr std::uint32_t reg(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_FAULT;
}
constexpr std::size_t kMaxRequests = 64;
// The inlet temperatures the thermal model is meant for, milli-degrees C.
constexpr std::int32_t kAmbientMinMc = -40000, kAmbientMaxMc = 150000;
constexpr std::uint32_t kLoadMaxWatts = 1000;
constexpr std::uint32_t kPagesPerChannel =
    static_cast<std::uint32_t>(JAL_HBM_CHANNEL_BYTES / JAL_PAGE_SIZE);
}  // namespace

std::uint32_t FaultInjector::read(std::uint32_t offset)
{
    switch (offset) {
    case reg(JAL_FAULT_KIND):
        return staged_.kind;
    case reg(JAL_FAULT_ARG(0)):
    case reg(JAL_FAULT_ARG(1)):
    case reg(JAL_FAULT_ARG(2)):
        return staged_.args[(offset - reg(JAL_FAULT_ARG(0))) / 4];
    case reg(JAL_FAULT_STATUS):
        return status_;
    default:
        break;
    }
    std::lock_guard lock(m_);
    const Request none{};
    const Request& head = requests_.empty() ? none : requests_.front();
    switch (offset) {
    case reg(JAL_FAULT_REQ_KIND):
        return head.kind;
    case reg(JAL_FAULT_REQ_ARG(0)):
    case reg(JAL_FAULT_REQ_ARG(1)):
    case reg(JAL_FAULT_REQ_ARG(2)):
        return head.args[(offset - reg(JAL_FAULT_REQ_ARG(0))) / 4];
    default:
        return 0;
    }
}

void FaultInjector::write(std::uint32_t offset, std::uint32_t value)
{
    switch (offset) {
    case reg(JAL_FAULT_KIND):
        staged_.kind = value;
        return;
    case reg(JAL_FAULT_ARG(0)):
    case reg(JAL_FAULT_ARG(1)):
    case reg(JAL_FAULT_ARG(2)):
        staged_.args[(offset - reg(JAL_FAULT_ARG(0))) / 4] = value;
        return;
    case reg(JAL_FAULT_CTRL):
        if (value & JAL_FAULT_GO) status_ = apply(staged_);
        return;
    case reg(JAL_FAULT_REQ_TAKE): {
        std::lock_guard lock(m_);
        if (!requests_.empty()) requests_.pop_front();
        if (!requests_.empty()) chip_.clock().raise(JAL_EV_FAULT);
        return;
    }
    default:
        return;
    }
}

void FaultInjector::queue(const Request& r)
{
    {
        std::lock_guard lock(m_);
        if (requests_.size() >= kMaxRequests) requests_.pop_front();
        requests_.push_back(r);
    }
    chip_.clock().raise(JAL_EV_FAULT);
}

std::size_t FaultInjector::pending() const
{
    std::lock_guard lock(m_);
    return requests_.size();
}

std::uint32_t FaultInjector::apply(const Request& r)
{
    const auto [a0, a1, a2] = r.args;
    std::uint32_t status = JAL_STATUS_OK;
    switch (r.kind) {
    case JAL_DEBUG_FAULT_SLICE_FAIL:
    case JAL_DEBUG_FAULT_SLICE_HANG:
        if (a0 >= JAL_NUM_SLICES || !(chip_.slices().enabled() >> a0 & 1) || a1 || a2)
            return JAL_STATUS_INVALID_FIELD;
        chip_.slices().arm_fault(a0, r.kind == JAL_DEBUG_FAULT_SLICE_HANG ? Slices::Fault::hang
                                                                          : Slices::Fault::fail);
        break;
    case JAL_DEBUG_FAULT_HBM_LANE:
        if (a0 >= JAL_HBM_CHANNELS || a1 >= JAL_HBM_LANES || a2) return JAL_STATUS_INVALID_FIELD;
        chip_.phy().kill_lane(a0, a1);
        break;
    case JAL_DEBUG_FAULT_LINK_LANE:
        // A port that is not cabled has no lane to lose.
        if (a2 || !chip_.links().kill_lane(a0, a1)) return JAL_STATUS_INVALID_FIELD;
        break;
    case JAL_DEBUG_FAULT_ECC_CORRECTED:
        if (a0 >= JAL_HBM_CHANNELS || a1 == 0 || a1 > JAL_DEBUG_ECC_MAX || a2)
            return JAL_STATUS_INVALID_FIELD;
        chip_.phy().count_ecc(a0, a1, 0);
        break;
    case JAL_DEBUG_FAULT_ECC_UNCORRECTED:
        if (a0 >= JAL_HBM_CHANNELS || a1 >= kPagesPerChannel || a2) return JAL_STATUS_INVALID_FIELD;
        chip_.phy().count_ecc(a0, 0, 1);
        chip_.hbm().poison(jal_hbm_channel_base(a0) + std::uint64_t{a1} * JAL_PAGE_SIZE);
        break;
    case JAL_DEBUG_FAULT_AMBIENT: {
        const auto mc = static_cast<std::int32_t>(a0);
        if (mc < kAmbientMinMc || mc > kAmbientMaxMc || a1 || a2) return JAL_STATUS_INVALID_FIELD;
        chip_.power().set_ambient_c(mc / 1000.0);
        break;
    }
    case JAL_DEBUG_FAULT_LOAD:
        if (a0 > kLoadMaxWatts || a1 || a2) return JAL_STATUS_INVALID_FIELD;
        chip_.power().set_load_watts(a0);
        chip_.slices().set_synthetic_busy(a0 > 0);
        break;
    case JAL_DEBUG_FAULT_HANG_MAIN_LOOP:
    case JAL_DEBUG_FAULT_CRASH:
        if (a0 || a1 || a2) return JAL_STATUS_INVALID_FIELD;
        break;
    default:
        status = JAL_STATUS_INVALID_FIELD;
        break;
    }
    if (status == JAL_STATUS_OK)
        log(LogLevel::info, "chip{}: fault injected: {} {} {} {}", chip_.index(),
            jal_debug_fault_name(r.kind), a0, a1, a2);
    return status;
}

}  // namespace jal::emu
