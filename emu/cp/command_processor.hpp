// The command processor: the user-queue engines (one per queue id, see queue_engine.hpp)
// behind the CP block of jal/hw/mgmt.h, and one waiter thread per host function that
// turns the function's kick eventfd into engine wakeups.
#pragma once

#include "emu/cp/dispatch_unit.hpp"
#include "emu/cp/host_windows.hpp"
#include "emu/cp/queue_engine.hpp"
#include "jal/hw/mgmt.h"
#include "jal/hw/pci.h"

#include <array>
#include <memory>
#include <mutex>
#include <thread>

namespace jal::emu {

class CommandProcessor {
public:
    // slices/power: the chip's models kernel dispatches read (enabled map, clock) and feed
    // (busy slices, energy); null without a chip around the CP.
    // trace: jal-emu --trace's writer and chip (null: not tracing).
    CommandProcessor(HostInterface& host, HbmMemory& hbm, Mmu& mmu, Slices* slices = nullptr,
                     PowerModel* power = nullptr, const ChipTrace* trace = nullptr);
    ~CommandProcessor();
    CommandProcessor(const CommandProcessor&) = delete;
    CommandProcessor& operator=(const CommandProcessor&) = delete;

    // ---- management-core side: the register block (offsets inside JAL_MGMT_CP) ----
    std::uint32_t fw_read(std::uint32_t off);
    void fw_write(std::uint32_t off, std::uint32_t value);

    // A host function went away: its engines stop now (before its memory is cleared).
    void function_detached(int fn);
    // Chip reset: every engine disabled, registers cleared.
    void reset();

    const QueueEngine& queue(std::uint32_t qid) const { return *engines_[qid]; }
    const HostWindows& windows() const { return windows_; }
    DispatchUnit& dispatcher() { return dispatch_; }

private:
    struct Waiter {
        std::shared_ptr<Doorbells> db;
        std::thread thread;
        int stopfd = -1;
    };
    void control(std::uint32_t qid, std::uint32_t cmd);
    void enable(std::uint32_t qid, bool fresh);
    void ensure_waiter(std::uint32_t fn, const std::shared_ptr<Doorbells>& db);
    void stop_waiter(std::uint32_t fn);
    // JAL_CP_WIN_CMD: runs a window command on the WIN_* registers, sets win_status_.
    void window_command(std::uint32_t cmd);

    HostInterface& host_;
    std::mutex ctl_;  // engine start/stop: firmware, detaching transport threads, reset
    SignalNotifier signals_;
    HostWindows windows_;
    DispatchUnit dispatch_;
    std::array<FunctionWake, JAL_MGMT_MAX_FUNCS> wake_;
    std::array<Waiter, JAL_MGMT_MAX_FUNCS> waiters_;
    std::array<std::unique_ptr<QueueEngine>, JAL_MAX_USER_QUEUES> engines_;
    std::array<QueueConfig, JAL_MAX_USER_QUEUES> staged_{};  // what the registers hold
    std::uint32_t qsel_ = 0, hi_latch_ = 0;                  // management-core thread only
    struct WindowRegs {
        std::uint32_t fn = 0, space = 0, status = 0;
        std::uint64_t base = 0, size = 0;
    } win_;  // management-core thread only
};

}  // namespace jal::emu
