// Modelled time of one chip's management core, its event register and its watchdog.
//
// Time advances only on the management core's thread: by the cost of each peripheral
// access, and in wait_for_event(), which jumps to the next tick. Wall-clock time is used
// only to pace those jumps (`speed` modelled seconds per wall second; 0 = no pacing), so
// an idle emulator sleeps instead of spinning. Host threads raise events and requests.
#pragma once

#include "emu/chip/host_interface.hpp"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

namespace jal::emu {

// Thrown on the management core's thread to unwind running firmware back to its runner.
struct CoreReset {
    std::uint32_t cause;  // JAL_RESET_CAUSE_*
};
struct CoreShutdown {};

class CoreClock : public HostEvents {
public:
    CoreClock(double speed, std::function<void(std::uint64_t now_ns)> on_advance);

    std::uint64_t now_ns() const { return now_ns_.load(std::memory_order_relaxed); }
    std::uint64_t now_us() const { return now_ns() / 1000; }

    // ---- management-core thread ----
    void advance(std::uint64_t ns);  // may throw CoreReset (watchdog) or CoreShutdown
    void wait_for_event();           // may throw CoreReset or CoreShutdown
    void check_requests();           // throws a pending reset or shutdown
    // A debugger holds the core: runs posted tasks until `released()` (checked after each)
    // is true. Modelled time stands still and reset requests stay pending until the core
    // runs again; throws CoreShutdown if the emulator stops meanwhile.
    void hold(const std::function<bool()>& released);
    std::uint32_t events() const { return events_.load(); }
    void clear_events(std::uint32_t bits) { events_.fetch_and(~bits); }
    void set_tick_period_us(std::uint32_t us);
    std::uint32_t tick_period_us() const { return tick_us_; }
    void wdt_write(std::uint32_t offset, std::uint32_t value);
    std::uint32_t wdt_read(std::uint32_t offset) const;
    // The core restarts: events, tick and watchdog return to their reset values.
    void core_reset();

    // ---- any thread ----
    void raise(std::uint32_t events) override;
    void request_reset(std::uint32_t cause) override;
    void request_shutdown();
    // Runs `task` on the management-core thread the next time the core waits for an event
    // (so it never races the firmware's use of the models).
    void post(std::function<void()> task);

private:
    using WallClock = std::chrono::steady_clock;
    void advance_to(std::uint64_t t);
    void reanchor_if_drifted();
    void run_posted(std::unique_lock<std::mutex>& lock);

    const double speed_;
    const std::function<void(std::uint64_t)> on_advance_;
    std::atomic<std::uint64_t> now_ns_{0};
    std::atomic<std::uint32_t> events_{0};
    std::atomic<int> pending_reset_{-1};
    std::atomic<bool> shutdown_{false};
    std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> posted_;
    std::uint32_t tick_us_ = 1000;
    std::uint64_t next_tick_ns_ = 1000 * 1000;
    WallClock::time_point anchor_wall_ = WallClock::now();
    std::uint64_t anchor_virt_ns_ = 0;
    bool wdt_enabled_ = false;
    std::uint32_t wdt_timeout_ms_ = 0;
    std::uint64_t wdt_fed_ns_ = 0;
};

}  // namespace jal::emu
