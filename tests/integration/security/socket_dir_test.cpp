// A socket directory others may write to could hold a fake emulator's socket (planted by
// another user): neither jal-emu nor libjal uses it (docs/security.md).
#include <gtest/gtest.h>

#include <jal/chip_function.hpp>
#include <jal/error.hpp>
#include <jal/hw/status.h>

#include <filesystem>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"
#include "raw_client.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

std::string temp_dir()
{
    std::string pattern = (fs::temp_directory_path() / "jal-sec-XXXXXX").string();
    EXPECT_NE(mkdtemp(pattern.data()), nullptr);
    return pattern;
}

TEST(SocketDirTest, EmulatorRefusesADirectoryOthersCanWrite)
{
    const std::string dir = temp_dir();
    ASSERT_EQ(chmod(dir.c_str(), 0777), 0);
    const auto r = jal::test::run_command(
        {jal::test::bin_path("jal-emu"), "--socket-dir", dir, "--fw", "native"}, {}, 60s);
    EXPECT_FALSE(r.timed_out) << "jal-emu served a world-writable directory";
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("writable by other users"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir + "/jal0.sock"));
    fs::remove_all(dir);
}

TEST(SocketDirTest, ClientRefusesADirectoryOthersCanWrite)
{
    jal::test::EmuProcess emu;
    ASSERT_EQ(chmod(emu.socket_dir().c_str(), 0777), 0);
    try {
        jal::ChipFunction::open(0, emu.open_options());
        ADD_FAILURE() << "opened a device in a world-writable directory";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_PERMISSION) << e.what();
    }
    ASSERT_EQ(chmod(emu.socket_dir().c_str(), 0700), 0);
    EXPECT_NO_THROW(jal::ChipFunction::open(0, emu.open_options()));
    EXPECT_EQ(emu.stop(), "");
}

// 0: connected; else the errno of connect().
int connect_as_stream(const std::string& path, int type)
{
    const int fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (fd < 0) return errno;
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
    const int rc = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    const int e = rc == 0 ? 0 : errno;
    close(fd);
    return e;
}

TEST(SocketDirTest, TheConsoleServesOnlyTheEmulatorsOwnerNotAllowedClients)
{
    // --allow-uid lets another user be a client (its own host function), never reach the
    // bring-up console, whose peek and poke read and write every tenant's memory.
    if (geteuid() != 0) GTEST_SKIP() << "acting as another user needs root";
    jal::test::EmuOptions o;
    o.extra_args = {"--allow-uid", "65534", "--fw", "native"};
    jal::test::EmuProcess emu(o);
    // The owner lets the other user reach the sockets (search permission only).
    const fs::path sockets = emu.socket_dir();
    ASSERT_EQ(chmod(sockets.c_str(), 0711), 0);
    ASSERT_EQ(chmod(sockets.parent_path().c_str(), 0711), 0);

    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(100);
        const int data = connect_as_stream(emu.socket_path(0), SOCK_SEQPACKET);
        const int console = connect_as_stream(sockets / "jal0.console", SOCK_STREAM);
        // 0: as it should be; bits say what went wrong.
        _exit((data != 0 ? 1 : 0) | (console == 0 ? 2 : 0));
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_NE(WEXITSTATUS(status), 100) << "could not become uid 65534";
    EXPECT_EQ(WEXITSTATUS(status) & 1, 0) << "the allowed uid could not reach its data socket";
    EXPECT_EQ(WEXITSTATUS(status) & 2, 0) << "the allowed uid reached the console";
    EXPECT_EQ(emu.stop(), "");
}

TEST(SocketDirTest, ADataSocketOpenedToOthersStillRefusesUidsNotAllowed)
{
    // The peer-credential check is the second line behind the modes: an operator who opens
    // the socket to everyone (chmod 0666) still lets in only the owner, root and --allow-uid.
    if (geteuid() != 0) GTEST_SKIP() << "acting as another user needs root";
    jal::test::EmuOptions o;
    o.extra_args = {"--fw", "native"};
    jal::test::EmuProcess emu(o);
    const fs::path sockets = emu.socket_dir();
    ASSERT_EQ(chmod(sockets.c_str(), 0711), 0);
    ASSERT_EQ(chmod(sockets.parent_path().c_str(), 0711), 0);
    ASSERT_EQ(chmod(emu.socket_path(0).c_str(), 0666), 0);

    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(100);
        try {
            jal::test::RawClient c(emu.socket_path(0));
            const long hello = c.hello();
            // 0: refused as it should be; 1: HELLO answered; 2: the connection stayed open.
            _exit(hello >= 0 ? 1 : c.closed_by_peer(10s) ? 0 : 2);
        } catch (...) {
            _exit(3);  // could not even connect: the mode change did not take
        }
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_NE(WEXITSTATUS(status), 100) << "could not become uid 65534";
    ASSERT_NE(WEXITSTATUS(status), 3) << "uid 65534 could not connect to a 0666 socket";
    EXPECT_EQ(WEXITSTATUS(status), 0) << "a uid that is not allowed was served";
    // The owner is still served.
    EXPECT_NO_THROW(jal::ChipFunction::open(0, emu.open_options()));
    EXPECT_EQ(emu.stop(), "");
}

}  // namespace
