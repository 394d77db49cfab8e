// What another thread of the test process is doing, for tests that must act only once a
// thread has gone to sleep (a waiter blocked in poll(), a producer backing off) instead of
// after a fixed time.
#pragma once

#include <chrono>
#include <fstream>
#include <initializer_list>
#include <string>
#include <sys/syscall.h>
#include <sys/types.h>
#include <thread>

#include <gtest/gtest.h>

namespace jal::test {

// The system call thread `tid` of this process is blocked in, or -1 while it runs
// (/proc/self/task/TID/syscall).
inline long blocking_syscall(pid_t tid)
{
    std::ifstream in("/proc/self/task/" + std::to_string(tid) + "/syscall");
    long nr = -1;
    return in >> nr ? nr : -1;
}

// Waits (yielding between looks, up to `timeout`) until thread `tid` is blocked in one of
// `calls`; a test failure if it never is.
inline void wait_until_blocked(pid_t tid, std::initializer_list<long> calls,
                               std::chrono::seconds timeout = std::chrono::seconds(30))
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        const long nr = blocking_syscall(tid);
        for (long c : calls)
            if (nr == c) return;
        std::this_thread::yield();
    }
    ADD_FAILURE() << "thread " << tid << " did not block in the expected system call";
}

// Sleeping in poll() (glibc issues either call).
inline constexpr std::initializer_list<long> kPollCalls = {
#ifdef SYS_poll
    SYS_poll,
#endif
    SYS_ppoll};
// Sleeping in poll() or on a futex (a condition variable).
inline constexpr std::initializer_list<long> kPollOrFutexCalls = {
#ifdef SYS_poll
    SYS_poll,
#endif
    SYS_ppoll, SYS_futex};
// Sleeping in std::this_thread::sleep_for.
inline constexpr std::initializer_list<long> kSleepCalls = {
#ifdef SYS_nanosleep
    SYS_nanosleep,
#endif
    SYS_clock_nanosleep};

}  // namespace jal::test
