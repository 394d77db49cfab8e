// Finding and opening devices without an emulator: the socket-directory rule and the
// errors a user sees.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sys/socket.h>
#include <sys/un.h>

#include <jal/chip_function.hpp>

namespace {

class ScopedEnv {
public:
    ScopedEnv(const char* name, const char* value) : name_(name)
    {
        if (const char* old = std::getenv(name)) old_ = old;
        if (value)
            ::setenv(name, value, 1);
        else
            ::unsetenv(name);
    }
    ~ScopedEnv()
    {
        if (old_)
            ::setenv(name_, old_->c_str(), 1);
        else
            ::unsetenv(name_);
    }

private:
    const char* name_;
    std::optional<std::string> old_;
};

TEST(EmuDir, ExplicitDirectoryWins)
{
    ScopedEnv a("JAL_EMU_DIR", "/x/y"), b("XDG_RUNTIME_DIR", "/run/user/7");
    EXPECT_EQ(jal::default_emu_dir(), "/x/y");
}

TEST(EmuDir, RuntimeDirectoryNext)
{
    ScopedEnv a("JAL_EMU_DIR", nullptr), b("XDG_RUNTIME_DIR", "/run/user/7");
    EXPECT_EQ(jal::default_emu_dir(), "/run/user/7/jal-emu");
}

TEST(EmuDir, TmpWithUidLast)
{
    ScopedEnv a("JAL_EMU_DIR", ""), b("XDG_RUNTIME_DIR", nullptr);
    EXPECT_EQ(jal::default_emu_dir(), "/tmp/jal-emu-" + std::to_string(::getuid()));
}

TEST(EmuDir, SocketPath)
{
    EXPECT_EQ(jal::emu_socket_path("/d", 3), "/d/jal3.sock");
}

TEST(DeviceOpen, MissingSocketSaysWhatToDo)
{
    jal::OpenOptions options;
    options.emu_dir = "/nonexistent-jal-dir";
    try {
        jal::ChipFunction::open(0, options);
        FAIL() << "opened a device that does not exist";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_NO_DEVICE);
        EXPECT_STREQ(e.what(), "device 0: no emulator socket at /nonexistent-jal-dir/jal0.sock "
                               "(is jal-emu running? set JAL_EMU_DIR)");
    }
}

TEST(DeviceOpen, StaleSocketIsRefused)
{
    auto dir = std::filesystem::temp_directory_path() / ("jal-stale-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::string path = (dir / "jal0.sock").string();
    int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strcpy(addr.sun_path, path.c_str());
    ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    ::close(fd);  // bound, never listening: what a crashed emulator leaves behind

    EXPECT_EQ(jal::ChipFunction::enumerate(dir.string()).size(), 1u);
    jal::OpenOptions options;
    options.emu_dir = dir.string();
    try {
        jal::ChipFunction::open(0, options);
        FAIL();
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_NO_DEVICE);
        EXPECT_NE(std::string(e.what()).find("refuses connections"), std::string::npos) << e.what();
    }
    std::filesystem::remove_all(dir);
}

TEST(DeviceOpen, EnumerateFindsOnlySocketsInIndexOrder)
{
    auto dir = std::filesystem::temp_directory_path() / ("jal-enum-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "jal5.sock") << "not a socket";
    for (int i : {10, 2}) {
        int fd = ::socket(AF_UNIX, SOCK_SEQPACKET, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        std::strcpy(addr.sun_path, (dir / ("jal" + std::to_string(i) + ".sock")).c_str());
        ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
        ::close(fd);
    }
    auto found = jal::ChipFunction::enumerate(dir.string());
    ASSERT_EQ(found.size(), 2u);
    EXPECT_EQ(found[0].index, 2u);
    EXPECT_EQ(found[1].index, 10u);
    EXPECT_TRUE(jal::ChipFunction::enumerate("/nonexistent-jal-dir").empty());
    std::filesystem::remove_all(dir);
}

TEST(DeviceTypes, Names)
{
    EXPECT_STREQ(jal::state_name(jal::DeviceState::ready), "ready");
    EXPECT_EQ(jal::format_fw_version(0x000100), "0.1.0");
    EXPECT_EQ(jal::format_fw_version(0x020304), "2.3.4");
}

}  // namespace
