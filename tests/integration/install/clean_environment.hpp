// Shared by the install tests: a test with an empty environment (PATH=/usr/bin:/bin only)
// and a private temporary directory, so that nothing of the build's or the test runner's
// environment (LD_LIBRARY_PATH, JAL_*) can be what makes an installed program work.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "fixture/run_command.hpp"

namespace jal::test {

inline std::string describe(const CommandResult& r)
{
    return "exit " + std::to_string(r.exit_code) + (r.timed_out ? " (timed out)" : "") +
           "\nstdout:\n" + r.out + "\nstderr:\n" + r.err;
}

class CleanEnvironmentTest : public ::testing::Test {
protected:
    void SetUp() override
    {
        // Every program the test starts inherits this. ctest runs each test in a process of
        // its own, so no other test sees it.
        ASSERT_EQ(clearenv(), 0);
        setenv("PATH", "/usr/bin:/bin", 1);
        char tmpl[] = "/tmp/jal-install-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        work_ = tmpl;
    }
    void TearDown() override
    {
        std::error_code ec;
        if (!work_.empty()) std::filesystem::remove_all(work_, ec);
    }

    std::string work_;  // removed by TearDown
};

}  // namespace jal::test
