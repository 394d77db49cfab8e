// Context isolation through the direct backend: jal-system-isolation (tests/system/
// context_isolation.cpp; the system test runs the same program in the guest through jal.ko)
// against a real jal-emu. Every check it prints must pass, and every check must be there:
// a program that stops early fails here too.
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixture/emu_process.hpp"
#include "fixture/run_command.hpp"

namespace {

class ContextIsolationTest : public jal::test::EmuTest {
protected:
    jal::test::EmuOptions emu_options() const override
    {
        jal::test::EmuOptions o;
        o.extra_args = {"--fw", "native"};
        return o;
    }
};

TEST_F(ContextIsolationTest, NoContextOrProcessReachesAnothersDeviceMemory)
{
    {
        jal::ChipFunction booted = open_ready();
    }  // the chip is READY before the program runs
    jal::test::CommandResult r = jal::test::run_command({JAL_ISOLATION_EXE}, {emu().env()});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    std::vector<std::string> expected = {"setup",
                                         "code-object-of-another-context",
                                         "arguments-of-another-context",
                                         "other-process",
                                         "secret-intact",
                                         "attacker-queue-works"};
    for (const char* who : {"", "other-process-"})
        for (const char* check :
             {"copy-read", "copy-read-leaks-nothing", "copy-write", "tload", "tload-leaks-nothing",
              "tgather", "tgather-leaks-nothing", "ld", "ld-leaks-nothing", "tstore",
              "tstore-leaks-nothing", "st", "st-leaks-nothing"})
            expected.push_back(std::string(who) + check);
    for (const std::string& check : expected)
        EXPECT_NE(r.out.find("isolation " + check + ": PASS\n"), std::string::npos)
            << check << " did not pass:\n"
            << r.out << r.err;
    EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
}

}  // namespace
