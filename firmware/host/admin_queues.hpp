// The admin queue pairs of all host functions (NVMe style). Each function's JAL_HOSTIF_FN
// bank mirrors what that host wrote to its JAL_REG_ADMIN_* registers; the firmware keeps
// its own head/tail/phase and drops all of it whenever the function's generation changes
// (attach, detach, ADMIN_CTRL write, reset).
#pragma once

#include <array>
#include <cstdint>

#include "firmware/host/admin_commands.hpp"
#include "firmware/host/journal.hpp"
#include "jal/hw/mgmt.h"

namespace jal::fw::host {

class AdminQueues {
public:
    // Commands executed per function per service() call, so a flood of admin commands
    // cannot starve the power-management tick.
    static constexpr std::uint32_t kMaxCommandsPerWake = 16;

    AdminQueues(AdminCommands& commands, Journal& journal) : commands_(commands), journal_(journal)
    {}

    // JAL_EV_FUNC: the set of attached functions changed.
    void set_present(std::uint32_t present_mask);
    // JAL_EV_HOST: these functions have news (JAL_HOSTIF_FUNC_EVENTS).
    void note_events(std::uint32_t fn_mask) { pending_ |= fn_mask & present_; }
    // Services every function with news or unfinished work. Stops early and returns the
    // action when a command asks for a reset or a hang (its completion is already posted).
    AfterAction service();

    std::uint32_t completed() const { return completed_; }
    std::uint32_t pending() const { return pending_; }

private:
    enum class State : std::uint8_t { kIdle, kReady, kError };
    struct Queue {
        State state = State::kIdle;
        bool have_generation = false;
        std::uint32_t generation = 0;
        std::uint64_t sq_base = 0, cq_base = 0;
        std::uint32_t sq_size = 0, cq_size = 0;
        std::uint32_t sq_head = 0, cq_tail = 0;
        std::uint32_t phase = 1;
    };

    // Returns true when the function still has work (more commands, CQ full).
    bool service_one(std::uint32_t fn, AfterAction& after);
    enum class Enabled : std::uint8_t { kYes, kRefused, kRaced };
    Enabled enable(std::uint32_t fn, Queue& q);
    void set_error(std::uint32_t fn, Queue& q, std::uint32_t status);
    // Posts one completion; returns the DMA's jal_status.
    std::uint32_t post(std::uint32_t fn, Queue& q, const jal_admin_sqe& sqe, const Completion& c);

    AdminCommands& commands_;
    Journal& journal_;
    std::array<Queue, JAL_MGMT_MAX_FUNCS> queues_{};
    std::uint32_t present_ = 0;
    std::uint32_t pending_ = 0;
    std::uint32_t completed_ = 0;
};

}  // namespace jal::fw::host
