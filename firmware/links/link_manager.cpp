#include "firmware/links/link_manager.hpp"

#include "firmware/hal/hal.hpp"
#include "firmware/host/event_codes.hpp"
#include "firmware/util/mask64.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/mgmt.h"

namespace jal::fw::links {

std::uint32_t LinkManager::train(std::uint32_t mask)
{
    for (std::uint32_t port = 0; port < JAL_LINK_PORTS; ++port) {
        if (!((mask >> port) & 1)) continue;
        hal::write32(JAL_LINK_SEL, port);
        hal::write32(JAL_LINK_CMD, JAL_LINK_CMD_TRAIN);
    }
    return hal::read32(JAL_LINK_UP_MASK);
}

std::uint32_t LinkManager::train_all()
{
    connected_ = hal::read32(JAL_LINK_CONNECTED_MASK);
    up_ = connected_ ? train(connected_) : 0;
    const std::uint32_t down = connected_ & ~up_;
    journal_.event(JAL_SRC_BOOT, down ? JAL_SEV_WARN : JAL_SEV_INFO, host::kEvLinksTrained,
                   "links trained", {util::popcount64(connected_), util::popcount64(up_), down});
    return JAL_STATUS_OK;
}

void LinkManager::tick()
{
    if (!connected_ || ++ticks_ < kRetrainTicks) return;
    ticks_ = 0;
    up_ = hal::read32(JAL_LINK_UP_MASK);
    const std::uint32_t down = connected_ & ~up_;
    if (!down) return;
    const std::uint32_t now_up = train(down);
    if ((now_up & down) != 0)
        journal_.event(
            JAL_SRC_BOOT, JAL_SEV_INFO, host::kEvLinksTrained, "links retrained",
            {util::popcount64(connected_), util::popcount64(now_up), connected_ & ~now_up});
    up_ = now_up;
}

}  // namespace jal::fw::links
