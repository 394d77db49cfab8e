// The chip's socket under connection floods: silent connections time out, pending ones
// are bounded, running out of descriptors does not wedge the listener, and a client's
// connect gives up on a listener that accepts nothing (docs/security.md, "Connections").
#include <gtest/gtest.h>

#include <jal/chip_function.hpp>
#include <jal/error.hpp>
#include <jal/hw/status.h>

#include <cstring>
#include <filesystem>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "fixture/emu_process.hpp"
#include "raw_client.hpp"

namespace {

using namespace std::chrono_literals;
using jal::test::RawClient;

jal::test::EmuOptions with_args(std::vector<std::string> args)
{
    jal::test::EmuOptions o;
    o.extra_args = std::move(args);
    return o;
}

TEST(ListenerTest, SilentConnectionIsClosed)
{
    jal::test::EmuProcess emu(with_args({"--hello-timeout", "0.2"}));
    RawClient idle(emu.socket_path());
    EXPECT_TRUE(idle.closed_by_peer(60s));
    // A client that speaks is served as before.
    RawClient c(emu.socket_path());
    EXPECT_EQ(c.hello(), JAL_STATUS_OK);
    EXPECT_EQ(emu.stop(), "");
}

TEST(ListenerTest, PendingConnectionsAreBounded)
{
    jal::test::EmuProcess emu(with_args({"--max-pending", "2", "--hello-timeout", "3600"}));
    std::vector<std::unique_ptr<RawClient>> idle;
    for (int i = 0; i < 3; ++i) idle.push_back(std::make_unique<RawClient>(emu.socket_path()));
    // One of the three is over the bound and is closed at once.
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    int closed = -1;
    while (closed < 0 && std::chrono::steady_clock::now() < deadline)
        for (int i = 0; i < 3 && closed < 0; ++i)
            if (idle[i]->closed_by_peer(10ms)) closed = i;
    ASSERT_GE(closed, 0) << "no connection over the bound was closed";
    // Once the idle ones go, newcomers are served.
    idle.clear();
    bool served = false;
    for (auto d = std::chrono::steady_clock::now() + 60s;
         !served && std::chrono::steady_clock::now() < d;) {
        RawClient c(emu.socket_path());
        served = c.hello() == JAL_STATUS_OK;
    }
    EXPECT_TRUE(served) << emu.output();
    EXPECT_EQ(emu.stop(), "");
}

std::size_t open_fds(pid_t pid)
{
    std::error_code ec;
    std::size_t n = 0;
    for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec))
        ++n;
    return n;
}

// At the descriptor limit accept() fails; the listener used to spin on it and, since it
// closed finished clients' sockets only after a successful accept, never recovered.
TEST(ListenerTest, RecoversFromDescriptorExhaustion)
{
    constexpr rlim_t kLimit = 96;
    rlimit saved{};
    ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &saved), 0);
    rlimit low = saved;
    low.rlim_cur = kLimit;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &low), 0);  // inherited by the emulator only
    std::unique_ptr<jal::test::EmuProcess> emu;
    try {
        emu = std::make_unique<jal::test::EmuProcess>(
            with_args({"--max-pending", "1000", "--hello-timeout", "3600"}));
    } catch (...) {
        setrlimit(RLIMIT_NOFILE, &saved);
        throw;
    }
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &saved), 0);
    {
        // Booted: no descriptor the start-up used for a while is still open.
        jal::ChipFunction booted = jal::ChipFunction::open(0, emu->open_options());
        ASSERT_EQ(booted.wait_ready(jal::test::kBootTimeout).state, jal::DeviceState::ready);
    }

    // Idle connections until the emulator has no descriptor left and stops accepting:
    // its descriptor table is full and the listen backlog fills up (connect: EAGAIN).
    std::vector<int> idle;
    bool backlog_full = false;
    const auto deadline = std::chrono::steady_clock::now() + 60s;
    while (!(backlog_full && open_fds(emu->pid()) >= kLimit) &&
           std::chrono::steady_clock::now() < deadline && idle.size() < 4 * kLimit) {
        const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strncpy(addr.sun_path, emu->socket_path().c_str(), sizeof addr.sun_path - 1);
        backlog_full = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0;
        if (backlog_full)
            close(fd);  // the emulator may still be taking what is queued: try again
        else
            idle.push_back(fd);
    }
    ASSERT_TRUE(backlog_full && open_fds(emu->pid()) >= kLimit)
        << "the emulator never ran out of descriptors";

    // The clients go away; the emulator must get its descriptors back (without waiting
    // for a new connection to be accepted first) and serve again.
    for (int fd : idle) close(fd);
    bool freed = false;
    for (auto d = std::chrono::steady_clock::now() + 60s;
         !freed && std::chrono::steady_clock::now() < d; poll(nullptr, 0, 10))
        freed = open_fds(emu->pid()) < kLimit / 2;
    ASSERT_TRUE(freed) << "the emulator kept the closed connections' descriptors";
    bool served = false;
    for (auto d = std::chrono::steady_clock::now() + 60s;
         !served && std::chrono::steady_clock::now() < d;) {
        RawClient c(emu->socket_path());
        served = c.hello() == JAL_STATUS_OK;  // waits up to 30 s for the reply
    }
    EXPECT_TRUE(served) << emu->output();
    EXPECT_EQ(emu->stop(), "");
}

// A listener that accepts nothing (backlog full): libjal's open gives up with TIMEOUT
// instead of blocking in connect() forever. Run in a child so a hang cannot stall the suite.
TEST(ListenerTest, ConnectTimesOutOnAWedgedListener)
{
    const std::string dir =
        std::filesystem::temp_directory_path() / ("jal-wedged-" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    std::filesystem::permissions(dir, std::filesystem::perms::owner_all);
    const std::string path = dir + "/jal0.sock";
    const int listener = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    ASSERT_EQ(bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ASSERT_EQ(listen(listener, 0), 0);
    // Fill the backlog.
    std::vector<int> queued;
    for (int i = 0; i < 8; ++i) {
        const int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0)
            queued.push_back(fd);
        else
            close(fd);
    }

    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        jal::OpenOptions o;
        o.emu_dir = dir;
        o.reply_timeout = 300ms;
        try {
            jal::ChipFunction::open(0, o);
        } catch (const jal::Error& e) {
            _exit(e.status() == JAL_STATUS_TIMEOUT ? 0 : 2);
        } catch (...) {
            _exit(3);
        }
        _exit(4);
    }
    int status = 0;
    bool exited = false;
    for (auto d = std::chrono::steady_clock::now() + 60s;
         !exited && std::chrono::steady_clock::now() < d;) {
        exited = waitpid(pid, &status, WNOHANG) == pid;
        if (!exited) poll(nullptr, 0, 10);
    }
    if (!exited) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
    }
    EXPECT_TRUE(exited) << "jal::ChipFunction::open still blocked in connect";
    EXPECT_TRUE(exited && WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    for (int fd : queued) close(fd);
    close(listener);
    std::filesystem::remove_all(dir);
}

}  // namespace
