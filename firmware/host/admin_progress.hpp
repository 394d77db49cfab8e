// JAL_REG_ADMIN_PROGRESS: the host times an admin command out only after its admin timeout
// passes without this count moving, so long work inside a command (mapping or freeing most
// of HBM) tells the host it is still going, as it feeds the watchdog.
#pragma once

#include "firmware/hal/hal.hpp"
#include "jal/hw/mgmt.h"

namespace jal::fw::host {

inline void report_admin_progress()
{
    hal::write32(JAL_HOSTIF_ADMIN_PROGRESS, 1);
}

}  // namespace jal::fw::host
