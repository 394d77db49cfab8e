// A socket directory others may write to could hold a fake emulator's socket (planted by
// another user): neither jal-emu nor libjal uses it (docs/security.md).
#include <gtest/gtest.h>

#include <jal/chip_function.hpp>
#include <jal/error.hpp>
#include <jal/hw/status.h>

#include <filesystem>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"

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

}  // namespace
