// A client process that dies with contexts, memory and busy queues leaves the device clean
// for the next one: killed by SIGKILL mid-traffic, or exiting without cleaning up.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "runtime_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using namespace jal::runtime;

constexpr uint64_t kPage = JAL_PAGE_SIZE;
// Slice 11 nearly full: 1728 pages of 2 MiB per slice, less a few.
constexpr uint64_t kNearlyASlice = 1720 * kPage;
constexpr uint64_t kSlice = 1ull << 11;

// The doomed client: fills slice 11, starts copying on two queues, tells the parent, then
// either keeps going until killed or exits without cleaning up. Never returns.
[[noreturn]] void doomed_client(const std::string& dir, int ready_fd, bool exit_by_itself)
{
    try {
        Device dev(0, dir);
        Context ctx(dev);
        Memory big(ctx, kNearlyASlice, JAL_PLACE_SLICE, kSlice);
        Memory other(ctx, 4 * kPage, JAL_PLACE_INTERLEAVED, 0b11);
        Queue q1(ctx, 64), q2(ctx, 64);
        HostBuffer h(dev, 1 << 20);
        for (uint64_t i = 0;; i++) {
            q1.copy_to_device(big.va() + (i % 64) * kPage, h, 0, 1 << 20);
            q2.copy(JAL_COPY_D2D, other.va(), big.va(), 1 << 20);
            if (i == 200) {
                char c = 'r';
                [[maybe_unused]] ssize_t n = ::write(ready_fd, &c, 1);
                if (exit_by_itself) ::_exit(0);  // queues busy, nothing freed
            }
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "doomed client: %s\n", e.what());
        ::_exit(3);
    }
}

class ClientDeathTest : public jal::test::RuntimeTest,
                        public ::testing::WithParamInterface<bool> {};

TEST_P(ClientDeathTest, TheNextClientFindsTheDeviceClean)
{
    bool exit_by_itself = GetParam();
    int pipefd[2];
    ASSERT_EQ(::pipe(pipefd), 0);
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        ::close(pipefd[0]);
        doomed_client(emu().socket_dir(), pipefd[1], exit_by_itself);
    }
    ::close(pipefd[1]);
    char c = 0;
    ASSERT_EQ(::read(pipefd[0], &c, 1), 1) << "the client died before it got going";
    ::close(pipefd[0]);
    if (!exit_by_itself) ::kill(pid, SIGKILL);
    int status;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    if (exit_by_itself) {
        ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
    }

    // A new client: the dead one's slice is free again (the firmware cleans up when it
    // notices the function went away: retry until it has), and queues work.
    Device fresh(0, emu().socket_dir());
    Context ctx(fresh);
    std::unique_ptr<Memory> big;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    auto backoff = 1ms;  // between attempts, each an admin command the firmware serves
    while (!big) {
        try {
            big = std::make_unique<Memory>(ctx, kNearlyASlice, JAL_PLACE_SLICE, kSlice);
        } catch (const jal::Error& e) {
            ASSERT_EQ(e.status(), JAL_STATUS_NO_MEMORY) << e.what();
            ASSERT_LT(std::chrono::steady_clock::now(), deadline)
                << "the dead client's memory was never freed";
            std::this_thread::sleep_for(backoff);
            backoff = std::min(2 * backoff, 20ms);
        }
    }
    Queue q(ctx);
    HostBuffer h(fresh, 4096), back(fresh, 4096);
    std::memset(h.data(), 0xa5, 4096);
    Signal s(fresh, 2);
    q.copy_to_device(big->va() + kNearlyASlice - 4096, h, 0, 4096, &s);
    q.copy_to_host(back, 0, big->va() + kNearlyASlice - 4096, 4096, &s);
    auto r = s.wait_zero(60s);
    ASSERT_TRUE(r.satisfied);
    EXPECT_EQ(r.status, JAL_STATUS_OK);
    EXPECT_EQ(back.data()[123], std::byte{0xa5});
}

INSTANTIATE_TEST_SUITE_P(KilledOrExited, ClientDeathTest, ::testing::Values(false, true),
                         [](const auto& info) {
                             return info.param ? "ExitWithoutCleanup" : "SigkillMidTraffic";
                         });

}  // namespace
