// `cmake --install` of this build tree into a temporary prefix, then everything from there
// with an empty environment (PATH=/usr/bin:/bin only: no LD_LIBRARY_PATH, no JAL_*), as a
// user or a runtime author gets it (docs/install.md):
//   * every installed program runs (it finds libjal through its RUNPATH) and has --version;
//   * the installed jal-emu finds the installed firmware image and its chip boots;
//   * a project outside the tree builds against the prefix through find_package(jal) and
//     through pkg-config, and talks to that chip.
// The build directory, cmake and the layout come from CMake as compile definitions.
#include <filesystem>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <jal/hw/isa.h>
#include <jal/hw/version.h>

#include "clean_environment.hpp"
#include "fixture/run_command.hpp"
#include "tools/common/emu_process.hpp"

namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;
using jal::test::describe;
using jal::test::run_command;

const std::vector<std::string> kPrograms = {"jalctl",    "jal-emu",     "jal-run",    "jal-serve",
                                            "jal-bench", "jal-mkmodel", "jal-objdump"};

// The build tree installed into work_/prefix.
class InstallTest : public jal::test::CleanEnvironmentTest {
protected:
    void SetUp() override
    {
        CleanEnvironmentTest::SetUp();
        if (HasFatalFailure()) return;
        prefix_ = work_ + "/prefix";
        const auto r =
            run_command({JAL_CMAKE, "--install", JAL_BUILD_DIR, "--prefix", prefix_}, {}, 120s);
        ASSERT_EQ(r.exit_code, 0) << describe(r);
    }

    std::string bin(const std::string& name) const { return prefix_ + "/bin/" + name; }

    std::string prefix_;
};

TEST_F(InstallTest, LayoutIsWhereTheDocsSayAndProgramsFindLibjalRelatively)
{
    for (const auto& program : kPrograms) EXPECT_TRUE(fs::is_regular_file(bin(program))) << program;
    const std::string lib = prefix_ + "/" JAL_INSTALL_LIBDIR;
    EXPECT_TRUE(fs::exists(lib + "/libjal.so.0"));
    EXPECT_TRUE(fs::exists(lib + "/cmake/jal/jalConfig.cmake"));
    EXPECT_TRUE(fs::exists(lib + "/pkgconfig/jal.pc"));
    EXPECT_TRUE(fs::exists(prefix_ + "/include/jal/jal.hpp"));
    EXPECT_TRUE(fs::exists(prefix_ + "/include/jal/hw/version.h"));
    EXPECT_TRUE(fs::is_regular_file(prefix_ + "/" JAL_FW_INSTALL_DIR "/jal-fw.bin"));
    EXPECT_TRUE(fs::is_regular_file(prefix_ + "/" JAL_FW_INSTALL_DIR "/jal-fw.elf"));
    // The driver's DKMS sources are for the jal-dkms package only (/usr/src), not a prefix.
    EXPECT_FALSE(fs::exists(prefix_ + "/src")) << "cmake/dkms.cmake installs into a prefix";

    // The RUNPATH is relative to the program ($ORIGIN), never the build tree's absolute one.
    const auto r = run_command({"/usr/bin/readelf", "-d", bin("jalctl")});
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_NE(r.out.find("[$ORIGIN/../" JAL_INSTALL_LIBDIR "]"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find(JAL_BUILD_DIR), std::string::npos) << r.out;
}

TEST_F(InstallTest, EveryProgramPrintsItsVersions)
{
    const std::string hw = "device interface " + std::to_string(JAL_HW_VERSION_MAJOR) + "." +
                           std::to_string(JAL_HW_VERSION_MINOR);
    const std::string isa = "tile ISA " + std::to_string(JAL_ISA_VERSION_MAJOR) + "." +
                            std::to_string(JAL_ISA_VERSION_MINOR);
    for (const auto& program : kPrograms) {
        const auto r = run_command({bin(program), "--version"}, {}, 30s);
        ASSERT_EQ(r.exit_code, 0) << program << ": " << describe(r);
        EXPECT_EQ(r.out.rfind(program + " " JAL_PROJECT_VERSION " (", 0), 0u) << r.out;
        EXPECT_NE(r.out.find(hw), std::string::npos) << r.out;
        if (program == "jal-emu" || program == "jal-objdump") {
            EXPECT_NE(r.out.find(isa), std::string::npos) << r.out;
        }
    }
}

TEST_F(InstallTest, EmulatorHelpNamesTheInstalledFirmwareImage)
{
    const auto r = run_command({bin("jal-emu"), "--help"}, {}, 30s);
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    // The default is resolved when jal-emu starts: no image beside it, so the installed one.
    EXPECT_NE(r.out.find(prefix_ + "/bin/" JAL_FW_IMAGE_FROM_BINDIR "/jal-fw.bin"),
              std::string::npos)
        << r.out;
}

// The chip of an installed jal-emu (firmware image from the prefix) reaches READY, and a
// consumer built against the prefix both ways identifies it as jalctl does.
TEST_F(InstallTest, InstalledEmulatorBootsAndConsumersBuildAgainstThePrefix)
{
    jal::tools::EmuProcessOptions emu_options;
    emu_options.program = bin("jal-emu");
    emu_options.args = {"--fw", "image"};
    jal::tools::EmuProcess emu(emu_options);

    const auto info = run_command(
        {bin("jalctl"), "info", "--emu-dir", emu.socket_dir(), "--wait", "60", "--json"}, {}, 90s);
    ASSERT_EQ(info.exit_code, 0) << describe(info) << emu.output();
    const auto doc = nlohmann::json::parse(info.out);
    ASSERT_EQ(doc.at("state"), "ready") << info.out;
    const std::string identity = "model=" + doc.at("model").get<std::string>() +
                                 " serial=" + doc.at("serial").get<std::string>() +
                                 " interface=" + doc.at("interface_version").get<std::string>();

    // find_package(jal) with CMAKE_PREFIX_PATH only.
    const std::string build = work_ + "/consumer-cmake";
    auto r =
        run_command({JAL_CMAKE, "-S", JAL_CONSUMER_DIR, "-B", build, "-G", "Ninja",
                     "-DCMAKE_PREFIX_PATH=" + prefix_, "-DCMAKE_CXX_FLAGS=" JAL_CONSUMER_FLAGS},
                    {}, 120s);
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    r = run_command({JAL_CMAKE, "--build", build}, {}, 120s);
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    r = run_command({build + "/consumer", emu.socket_dir()}, {}, 60s);
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_EQ(r.out, identity + "\n");

    // pkg-config with PKG_CONFIG_PATH, a direct compile; the RUNPATH names the prefix's libdir.
    const std::string pkg = work_ + "/consumer-pkg-config";
    r = run_command(
        {"/bin/sh", "-c",
         "g++ -std=c++20 " JAL_CONSUMER_FLAGS " -o \"$1\" \"$2\" "
         "$(pkg-config --cflags --libs jal) -Wl,-rpath,$(pkg-config --variable=libdir jal)",
         "sh", pkg, JAL_CONSUMER_DIR "/main.cpp"},
        {"PKG_CONFIG_PATH=" + prefix_ + "/" JAL_INSTALL_LIBDIR "/pkgconfig"}, 120s);
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    r = run_command({pkg, emu.socket_dir()}, {}, 60s);
    ASSERT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_EQ(r.out, identity + "\n");

    EXPECT_EQ(emu.stop(), "") << emu.output();
}

}  // namespace
