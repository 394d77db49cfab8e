// An admin command's deadline that counts only time without firmware progress.
//
// Freeing most of HBM is tens of thousands of page unmaps and scrubs: on a loaded host (or
// an emulator under a sanitizer) that can outlast any fixed budget, and a timeout there
// loses the command's result while the firmware goes on to finish it. The firmware moves
// JAL_REG_ADMIN_PROGRESS (device interface 1.10) at each command it takes and every few
// milliseconds of a long one, so the budget restarts whenever the register has moved since
// the last look. A firmware that moves it but never answers is still given up on once
// AdminQueueConfig::max_wait has passed.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <string>

#include <jal/hw/pci.h>
#include <jal/hw/regs.h>

#include "../backend/backend.hpp"
#include "../util/deadline.hpp"

namespace jal::admin {

class ProgressDeadline {
public:
    // `max_wait`: all the waiting, however the firmware moves (at least one budget).
    ProgressDeadline(backend::Backend& backend, const util::Deadline& deadline,
                     std::chrono::milliseconds max_wait)
        : backend_(backend), deadline_(deadline), limit_(std::max(max_wait, deadline.budget())),
          last_(progress())
    {}

    // True once the budget has passed with no progress since the last look (or the limit
    // on all the waiting has); restarts the budget when the firmware has moved on.
    bool expired()
    {
        if (!deadline_.expired()) return false;
        const std::uint32_t now = progress();
        if (now == last_) return true;
        if (util::Deadline::clock::now() - start_ >= limit_) return out_of_time_ = true;
        last_ = now;
        deadline_ = util::Deadline(deadline_.budget());
        return false;
    }
    // The current budget's deadline, for poll(2)-style waits.
    const util::Deadline& current() const { return deadline_; }
    // Why expired() said so, for error messages: "after 5 s without progress".
    std::string why() const
    {
        if (out_of_time_)
            return "after " + util::describe(limit_) + " in all, the firmware still working";
        return "after " + util::describe(deadline_.budget()) + " without progress";
    }

private:
    std::uint32_t progress() const { return backend_.read32(JAL_BAR_REGS, JAL_REG_ADMIN_PROGRESS); }

    backend::Backend& backend_;
    util::Deadline deadline_;
    util::Deadline::clock::time_point start_ = util::Deadline::clock::now();
    std::chrono::milliseconds limit_;
    std::uint32_t last_;
    bool out_of_time_ = false;
};

}  // namespace jal::admin
