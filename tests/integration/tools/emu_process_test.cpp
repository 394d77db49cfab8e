// The emulator-process helper (tools/common/emu_process.hpp) and the fixture over it: a
// started jal-emu accepts connections at once, and no jal-emu outlives a failed start, a
// fixture whose device open throws, or the process that started it.
#include <gtest/gtest.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <jal/chip_function.hpp>
#include <jal/error.hpp>

#include "fixture/emu_process.hpp"
#include "tools/common/emu_process.hpp"

namespace {

using namespace std::chrono_literals;

// True once `pid` is gone or a zombie (no longer running, whoever reaps it).
bool ended(pid_t pid)
{
    if (::kill(pid, 0) != 0) return errno == ESRCH;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, comm, state;
    stat >> pid_field >> comm >> state;
    return !stat || state == "Z";
}

bool ends_within(pid_t pid, std::chrono::seconds timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!ended(pid)) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::yield();
    }
    return true;
}

TEST(EmuProcess, EverySocketAcceptsAConnectionOnceStarted)
{
    jal::test::EmuOptions o;
    o.chips = 2;
    jal::test::EmuProcess emu(o);
    EXPECT_TRUE(jal::tools::socket_accepts(emu.socket_path(0)));
    EXPECT_TRUE(jal::tools::socket_accepts(emu.socket_path(1)));
    EXPECT_EQ(emu.stop(), "");
    EXPECT_EQ(emu.stop(), "") << "a second stop reports the same";
}

TEST(EmuProcess, AStartThatFailsLeavesNoProcessAndNoDirectory)
{
    jal::test::EmuOptions o;
    o.extra_args = {"--no-such-option"};
    try {
        jal::test::EmuProcess emu(o);
        FAIL() << "jal-emu started with an unknown option";
    } catch (const std::runtime_error& e) {
        EXPECT_NE(std::string(e.what()).find("exited during start-up"), std::string::npos)
            << e.what();
    }
}

// A fixture whose device open throws during SetUp (as when the chip is not there yet):
// its TearDown still stops the emulator.
class ThrowingOpen : public jal::test::EmuTest {
public:
    void TestBody() override {}
    void SetUp() override
    {
        EmuTest::SetUp();
        pid = emu().pid();
        jal::ChipFunction::open(7, emu().open_options());  // no chip 7: throws
    }
    void TearDown() override { EmuTest::TearDown(); }
    pid_t pid = -1;
};

TEST(EmuProcess, AFixtureWhoseDeviceOpenThrowsStopsItsEmulator)
{
    ThrowingOpen fixture;
    EXPECT_THROW(fixture.SetUp(), jal::Error);
    ASSERT_GT(fixture.pid, 0);
    fixture.TearDown();
    EXPECT_TRUE(ended(fixture.pid));
}

TEST(EmuProcess, TheEmulatorDiesWithTheProcessThatStartedIt)
{
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);  // jal-emu must not hold the write end
    const pid_t parent = ::fork();
    ASSERT_GE(parent, 0);
    if (parent == 0) {
        // A process that starts an emulator, reports its pid and is killed before it can
        // stop it.
        ::close(fds[0]);
        try {
            jal::tools::EmuProcessOptions o;
            o.program = jal::test::bin_path("jal-emu");
            jal::tools::EmuProcess emu(o);
            const pid_t pid = emu.pid();
            const std::string& dir = emu.work_dir();
            if (::write(fds[1], &pid, sizeof pid) != sizeof pid ||
                ::write(fds[1], dir.data(), dir.size()) != static_cast<ssize_t>(dir.size()))
                ::_exit(2);
            ::raise(SIGKILL);
        } catch (...) {}
        ::_exit(1);
    }
    ::close(fds[1]);
    pid_t emu_pid = -1;
    const bool got = ::read(fds[0], &emu_pid, sizeof emu_pid) == sizeof emu_pid;
    std::string dir;
    char buf[256];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) dir.append(buf, n);
    ::close(fds[0]);
    int status;
    ASSERT_EQ(::waitpid(parent, &status, 0), parent);
    ASSERT_TRUE(got) << "the emulator did not start (wait status " << status << ")";
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    EXPECT_TRUE(ends_within(emu_pid, 30s)) << "jal-emu " << emu_pid << " outlived its parent";
    if (!ended(emu_pid)) ::kill(emu_pid, SIGKILL);
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);  // its owner could not
}

}  // namespace
