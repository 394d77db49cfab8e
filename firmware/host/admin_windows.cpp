// HOST_WINDOW (interface 1.11): a function's host spaces and their windows, kept by the
// command processor (jal/hw/mgmt.h, JAL_CP_WIN_*), which checks every host address a queue
// of a context with a host space names against them.
#include "firmware/host/admin_resources.hpp"
#include "firmware/queues/cp.hpp"
#include "jal/hw/status.h"

namespace jal::fw::host {

Completion ResourceCommands::host_window(std::uint32_t fn, const jal_admin_sqe& sqe)
{
    const std::uint32_t op = sqe.cdw[0];
    const std::uint32_t space = sqe.cdw[1];
    const std::uint64_t base = cdw64(sqe, 2);
    const std::uint64_t size = cdw64(sqe, 4);
    bool valid = space != 0;
    for (std::uint32_t i = 6; i < 10; ++i) valid = valid && sqe.cdw[i] == 0;
    if (op == JAL_WINDOW_CLEAR)
        valid = valid && base == 0 && size == 0;
    else if (op != JAL_WINDOW_ADD && op != JAL_WINDOW_REMOVE)
        valid = false;
    if (!valid) return Completion{0, JAL_STATUS_INVALID_FIELD, AfterAction::kNone};
    const std::uint32_t status = queues::cp::window(op, fn, space, base, size);
    return Completion{0, status, AfterAction::kNone};
}

}  // namespace jal::fw::host
