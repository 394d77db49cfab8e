#include "emu/chip/irq_eventfd.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <ctime>
#include <string>
#include <string_view>

#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

namespace jal::emu {

namespace {

constexpr long kWriteGuardNs = 20'000'000;  // the longest a write may block

void on_guard_signal(int) {}

// A real-time signal whose handler does nothing and restarts nothing: delivered to a
// thread blocked in write(), it makes the write fail with EINTR.
int guard_signal()
{
    static const int sig = [] {
        const int s = SIGRTMIN + 3;
        struct sigaction sa {};
        sa.sa_handler = on_guard_signal;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = 0;  // no SA_RESTART
        sigaction(s, &sa, nullptr);
        return s;
    }();
    return sig;
}

// One per signalling thread: a one-shot timer that sends guard_signal() to this thread.
class WriteGuard {
public:
    WriteGuard()
    {
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, guard_signal());
        pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
        sigevent sev{};
        sev.sigev_notify = SIGEV_THREAD_ID;
        sev.sigev_signo = guard_signal();
        sev.sigev_notify_thread_id = gettid();
        ok_ = timer_create(CLOCK_MONOTONIC, &sev, &timer_) == 0;
    }
    ~WriteGuard()
    {
        if (ok_) timer_delete(timer_);
    }
    void arm(long ns)
    {
        if (!ok_) return;
        itimerspec t{};
        t.it_value.tv_nsec = ns;
        timer_settime(timer_, 0, &t, nullptr);
    }
    void disarm() { arm(0); }

private:
    timer_t timer_{};
    bool ok_ = false;
};

}  // namespace

IrqEventfd::~IrqEventfd()
{
    close(fd_);
}

bool IrqEventfd::accept(int fd)
{
    char link[64];
    const std::string proc = "/proc/self/fd/" + std::to_string(fd);
    const ssize_t n = readlink(proc.c_str(), link, sizeof link);
    if (n <= 0 || std::string_view(link, static_cast<std::size_t>(n)) != "anon_inode:[eventfd]")
        return false;
    const int flags = fcntl(fd, F_GETFL);
    return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

void IrqEventfd::signal() const
{
    // The client may have cleared O_NONBLOCK since (the description is shared): set it
    // again, and bound the write in case it is cleared once more in between.
    const int flags = fcntl(fd_, F_GETFL);
    if (flags >= 0 && !(flags & O_NONBLOCK)) fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
    thread_local WriteGuard guard;
    const std::uint64_t one = 1;
    guard.arm(kWriteGuardNs);
    [[maybe_unused]] const ssize_t n = ::write(fd_, &one, sizeof one);
    guard.disarm();
    // n < 0 with EAGAIN (or EINTR): the counter is full, an interrupt is pending anyway.
}

}  // namespace jal::emu
