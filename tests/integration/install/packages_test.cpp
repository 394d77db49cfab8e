// `cpack -G DEB` of this build tree (cmake/packaging.cmake): one package per install
// component, each holding its files and no other's, with the dependencies that tie them
// together; unpacked together, the programs run with an empty environment. jal-dkms carries
// the driver's sources and the DKMS configuration and scripts.
// The build directory, cpack and the layout come from CMake as compile definitions.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "clean_environment.hpp"
#include "fixture/run_command.hpp"

namespace {

using namespace std::chrono_literals;
using jal::test::describe;
using jal::test::run_command;

const std::string kVersion = JAL_PROJECT_VERSION;
const std::string kLib = "./usr/" JAL_INSTALL_LIBDIR;
// Debian names a library's package after its SONAME: libjal.so.0 is in libjal0.
const std::string kLibPackage = "libjal" + kVersion.substr(0, kVersion.find('.'));

// Package name -> what `dpkg-deb -c` must list (paths as dpkg-deb prints them).
const std::map<std::string, std::vector<std::string>> kContents = {
    {kLibPackage,
     {kLib + "/libjal.so." + kVersion, kLib + "/libjal.so.0 -> libjal.so." + kVersion}},
    {"libjal-dev",
     {"./usr/include/jal/jal.h", "./usr/include/jal/jal.hpp", "./usr/include/jal/hw/version.h",
      kLib + "/libjal.so -> libjal.so.0", kLib + "/cmake/jal/jalConfig.cmake",
      kLib + "/pkgconfig/jal.pc"}},
    {"jal-tools",
     {"./usr/bin/jalctl", "./usr/bin/jal-run", "./usr/bin/jal-serve", "./usr/bin/jal-bench",
      "./usr/bin/jal-mkmodel", "./usr/bin/jal-objdump"}},
    {"jal-emu",
     {"./usr/bin/jal-emu", "./usr/" JAL_FW_INSTALL_DIR "/jal-fw.bin",
      "./usr/" JAL_FW_INSTALL_DIR "/jal-fw.elf"}},
    // The driver's sources where DKMS looks, laid out as in the repository (driver/Kbuild
    // includes ../include).
    {"jal-dkms",
     {"./usr/src/jal-" + kVersion + "/dkms.conf", "./usr/src/jal-" + kVersion + "/driver/Kbuild",
      "./usr/src/jal-" + kVersion + "/driver/Makefile",
      "./usr/src/jal-" + kVersion + "/driver/jal_drv.c",
      "./usr/src/jal-" + kVersion + "/driver/include/uapi/jal_accel.h",
      "./usr/src/jal-" + kVersion + "/include/jal/hw/regs.h"}},
};

class PackagesTest : public jal::test::CleanEnvironmentTest {
protected:
    // NAME_VERSION_ARCH.deb (CPACK_DEBIAN_FILE_NAME DEB-DEFAULT), whatever the architecture.
    std::string deb(const std::string& package) const
    {
        const std::string start = package + "_" + kVersion + "_";
        for (const auto& entry : std::filesystem::directory_iterator(work_)) {
            const std::string name = entry.path().filename();
            if (name.rfind(start, 0) == 0 && name.ends_with(".deb")) return entry.path();
        }
        return work_ + "/" + start + "(missing).deb";
    }

    std::string field(const std::string& package, const std::string& name) const
    {
        return run_command({"/usr/bin/dpkg-deb", "-f", deb(package), name}).out;
    }

    // DKMS builds (and removes) the module when jal-dkms is installed (and removed), for the
    // version the sources are installed under; scripts/build-packages.sh runs `dkms build`.
    void expect_dkms_package(const std::string& root) const
    {
        EXPECT_EQ(field("jal-dkms", "Architecture"), "all\n");
        EXPECT_EQ(field("jal-dkms", "Depends"), "dkms\n");
        std::ifstream conf(root + "/usr/src/jal-" + kVersion + "/dkms.conf");
        const std::string text{std::istreambuf_iterator<char>(conf), {}};
        EXPECT_NE(text.find("PACKAGE_NAME=\"jal\"\n"), std::string::npos) << text;
        EXPECT_NE(text.find("PACKAGE_VERSION=\"" + kVersion + "\"\n"), std::string::npos) << text;
        EXPECT_NE(text.find("BUILT_MODULE_LOCATION[0]=\"driver/\"\n"), std::string::npos) << text;
        auto r = run_command({"/usr/bin/dpkg-deb", "-I", deb("jal-dkms"), "postinst"});
        EXPECT_NE(r.out.find("common.postinst jal " + kVersion + " "), std::string::npos) << r.out;
        r = run_command({"/usr/bin/dpkg-deb", "-I", deb("jal-dkms"), "prerm"});
        EXPECT_NE(r.out.find("dkms remove -m jal -v " + kVersion + " --all\n"), std::string::npos)
            << r.out;
    }
};

TEST_F(PackagesTest, EachComponentIsOnePackageWithItsFilesAndDependencies)
{
    auto r = run_command(
        {JAL_CPACK, "-G", "DEB", "--config", JAL_BUILD_DIR "/CPackConfig.cmake", "-B", work_}, {},
        300s);
    ASSERT_EQ(r.exit_code, 0) << describe(r);

    std::map<std::string, std::string> listings;
    for (const auto& [package, files] : kContents) {
        r = run_command({"/usr/bin/dpkg-deb", "-c", deb(package)});
        ASSERT_EQ(r.exit_code, 0) << package << ": " << describe(r);
        listings[package] = r.out;
        for (const auto& file : files)
            EXPECT_NE(r.out.find(" " + file + "\n"), std::string::npos)
                << package << ": " << file << "\n"
                << r.out;
    }
    // No file in two packages: the programs are not in libjal0, the library not in the tools.
    EXPECT_EQ(listings[kLibPackage].find("/bin/"), std::string::npos) << listings[kLibPackage];
    EXPECT_EQ(listings["jal-tools"].find("libjal.so"), std::string::npos);
    EXPECT_EQ(listings["jal-tools"].find("jal-emu"), std::string::npos);
    EXPECT_EQ(listings["jal-dkms"].find("/bin/"), std::string::npos) << listings["jal-dkms"];

    const std::string exact = kLibPackage + " (= " + kVersion + ")";
    for (const auto& package : {"libjal-dev", "jal-tools"})
        EXPECT_NE(field(package, "Depends").find(exact), std::string::npos) << package;
    // jal-emu never needs libjal (docs/decisions.md, "Layering").
    const std::string emu_depends = field("jal-emu", "Depends");
    EXPECT_EQ(emu_depends.find("libjal"), std::string::npos) << emu_depends;
    EXPECT_NE(emu_depends.find("libunicorn"), std::string::npos) << emu_depends;

    // Unpacked side by side, as dpkg would install them (but under work_), they run.
    const std::string root = work_ + "/root";
    for (const auto& [package, files] : kContents) {
        r = run_command({"/usr/bin/dpkg-deb", "-x", deb(package), root});
        ASSERT_EQ(r.exit_code, 0) << package << ": " << describe(r);
    }
    expect_dkms_package(root);
    r = run_command({root + "/usr/bin/jalctl", "--version"});
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    r = run_command({root + "/usr/bin/jal-emu", "--help"});
    EXPECT_EQ(r.exit_code, 0) << describe(r);
    EXPECT_NE(r.out.find(root + "/usr/bin/" JAL_FW_IMAGE_FROM_BINDIR "/jal-fw.bin"),
              std::string::npos)
        << r.out;
}

}  // namespace
