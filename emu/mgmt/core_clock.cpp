#include "emu/mgmt/core_clock.hpp"

#include "jal/hw/mgmt.h"

namespace jal::emu {

namespace {
constexpr std::uint32_t wdt(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_WDT;
}
}  // namespace

CoreClock::CoreClock(double speed, std::function<void(std::uint64_t)> on_advance)
    : speed_(speed), on_advance_(std::move(on_advance))
{}

void CoreClock::check_requests()
{
    if (shutdown_.load()) throw CoreShutdown{};
    const int cause = pending_reset_.exchange(-1);
    if (cause >= 0) throw CoreReset{static_cast<std::uint32_t>(cause)};
}

void CoreClock::advance_to(std::uint64_t t)
{
    if (t <= now_ns()) return;
    now_ns_.store(t, std::memory_order_relaxed);
    on_advance_(t);
    if (tick_us_ != 0 && t >= next_tick_ns_) {
        const std::uint64_t period = std::uint64_t{tick_us_} * 1000;
        // Ticks missed while the core was busy coalesce into one, as a timer flag would.
        next_tick_ns_ = t - (t - next_tick_ns_) % period + period;
        events_.fetch_or(JAL_EV_TICK);
    }
    if (wdt_enabled_ && t - wdt_fed_ns_ > std::uint64_t{wdt_timeout_ms_} * 1000000) {
        wdt_enabled_ = false;
        throw CoreReset{JAL_RESET_CAUSE_WATCHDOG};
    }
}

void CoreClock::advance(std::uint64_t ns)
{
    check_requests();
    advance_to(now_ns() + ns);
}

void CoreClock::reanchor_if_drifted()
{
    const auto wall = WallClock::now();
    const double wall_ns = std::chrono::duration<double, std::nano>(wall - anchor_wall_).count();
    const double mapped = static_cast<double>(anchor_virt_ns_) + wall_ns * speed_;
    const double now = static_cast<double>(now_ns());
    // Busy firmware can run ahead of the wall clock (boot) or fall behind it (a slow
    // host); either way pacing restarts from here rather than stalling or bursting.
    if (now > mapped + 1e6 || now + 20e6 < mapped) {
        anchor_wall_ = wall;
        anchor_virt_ns_ = now_ns();
    }
}

void CoreClock::wait_for_event()
{
    check_requests();
    std::unique_lock lock(mutex_);
    if (speed_ > 0) reanchor_if_drifted();
    auto woken = [&] {
        return events_.load() != 0 || shutdown_.load() || pending_reset_.load() >= 0 ||
               !posted_.empty();
    };
    for (;;) {
        run_posted(lock);
        if (events_.load() != 0) return;
        if (tick_us_ == 0) {
            cv_.wait(lock, woken);
        } else if (speed_ > 0) {
            const auto deadline =
                anchor_wall_ +
                std::chrono::duration_cast<WallClock::duration>(
                    std::chrono::duration<double, std::nano>(
                        static_cast<double>(next_tick_ns_ - anchor_virt_ns_) / speed_));
            if (cv_.wait_until(lock, deadline, woken)) {
                // A host event: modelled time catches up with the wall clock, short of the tick.
                const double wall_ns =
                    std::chrono::duration<double, std::nano>(WallClock::now() - anchor_wall_)
                        .count();
                const auto mapped = static_cast<std::uint64_t>(
                    static_cast<double>(anchor_virt_ns_) + wall_ns * speed_);
                lock.unlock();
                check_requests();
                advance_to(std::min(mapped, next_tick_ns_ - 1));
                lock.lock();
                continue;
            }
            lock.unlock();
            advance_to(next_tick_ns_);
            lock.lock();
        } else {
            lock.unlock();
            check_requests();
            advance_to(next_tick_ns_);
            lock.lock();
        }
        if (shutdown_.load() || pending_reset_.load() >= 0) {
            lock.unlock();
            check_requests();
            lock.lock();
        }
    }
}

void CoreClock::hold(const std::function<bool()>& released)
{
    std::unique_lock lock(mutex_);
    for (;;) {
        // One task at a time: tasks posted after the release (a debugger's next interrupt)
        // stay queued for the core's next wait, in order.
        if (released()) return;
        if (!posted_.empty()) {
            auto task = std::move(posted_.front());
            posted_.pop_front();
            lock.unlock();
            task();
            lock.lock();
            continue;
        }
        if (shutdown_.load()) {
            lock.unlock();
            throw CoreShutdown{};
        }
        cv_.wait(lock, [&] { return shutdown_.load() || !posted_.empty(); });
    }
}

void CoreClock::run_posted(std::unique_lock<std::mutex>& lock)
{
    while (!posted_.empty()) {
        auto task = std::move(posted_.front());
        posted_.pop_front();
        lock.unlock();
        task();
        lock.lock();
    }
}

void CoreClock::post(std::function<void()> task)
{
    std::lock_guard lock(mutex_);
    posted_.push_back(std::move(task));
    cv_.notify_all();
}

void CoreClock::set_tick_period_us(std::uint32_t us)
{
    tick_us_ = us;
    next_tick_ns_ = now_ns() + std::uint64_t{us} * 1000;
}

void CoreClock::wdt_write(std::uint32_t offset, std::uint32_t value)
{
    switch (offset) {
    case wdt(JAL_WDT_CTRL):
        wdt_enabled_ = value & 1;
        wdt_fed_ns_ = now_ns();
        break;
    case wdt(JAL_WDT_TIMEOUT_MS):
        wdt_timeout_ms_ = value;
        break;
    case wdt(JAL_WDT_FEED):
        if (value == JAL_WDT_FEED_MAGIC) wdt_fed_ns_ = now_ns();
        break;
    default:
        break;
    }
}

std::uint32_t CoreClock::wdt_read(std::uint32_t offset) const
{
    switch (offset) {
    case wdt(JAL_WDT_CTRL):
        return wdt_enabled_ ? 1 : 0;
    case wdt(JAL_WDT_TIMEOUT_MS):
        return wdt_timeout_ms_;
    default:
        return 0;
    }
}

void CoreClock::core_reset()
{
    events_.store(0);
    wdt_enabled_ = false;
    wdt_timeout_ms_ = 0;
    set_tick_period_us(1000);
}

void CoreClock::raise(std::uint32_t events)
{
    events_.fetch_or(events);
    std::lock_guard lock(mutex_);
    cv_.notify_all();
}

void CoreClock::request_reset(std::uint32_t cause)
{
    pending_reset_.store(static_cast<int>(cause));
    std::lock_guard lock(mutex_);
    cv_.notify_all();
}

void CoreClock::request_shutdown()
{
    shutdown_.store(true);
    std::lock_guard lock(mutex_);
    cv_.notify_all();
}

}  // namespace jal::emu
