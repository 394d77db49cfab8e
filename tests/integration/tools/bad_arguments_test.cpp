// Arguments the tools must refuse with a clear message, before any work: real-valued
// options given NaN or infinity (CLI11's range checks alone let NaN through, which made
// jal-emu model a NaN inlet, jal-run sample at a NaN temperature and `jalctl telemetry -w
// nan` spin without pause), an empty id list, a generation longer than the context, and a
// file that is not one.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <fixture/emu_process.hpp>
#include <fixture/run_command.hpp>

namespace {

using jal::test::bin_path;
using jal::test::CommandResult;
using jal::test::run_command;

void expect_refused(const std::vector<std::string>& argv, const std::string& value)
{
    SCOPED_TRACE(argv[0] + " " + argv[1] + " " + value);
    std::vector<std::string> cmd = argv;
    cmd[0] = bin_path(argv[0]);
    cmd.push_back(value);
    // No emulator is running in this directory: a tool that accepted the value would fail
    // later with another message, or (jal-emu) start and be stopped by the timeout.
    const CommandResult r =
        run_command(cmd, {"JAL_EMU_DIR=/nonexistent-jal-test"}, std::chrono::seconds(30));
    EXPECT_FALSE(r.timed_out);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("not a finite number: " + value), std::string::npos) << r.out << r.err;
}

TEST(NonFiniteOptions, AreRefusedByEveryTool)
{
    for (const std::string value : {"nan", "NaN", "inf", "-inf"}) {
        expect_refused({"jal-emu", "--load-watts"}, value);
        expect_refused({"jal-emu", "--ambient-c"}, value);
        expect_refused({"jal-emu", "--speed"}, value);
        expect_refused({"jal-run", "--temp"}, value);
        expect_refused({"jal-run", "--top-p"}, value);
        expect_refused({"jalctl", "telemetry", "--watch"}, value);
    }
}

TEST(NonFiniteOptions, FiniteValuesStillPassTheCheck)
{
    // The same options with ordinary values get past parsing (and fail later, for want of
    // an emulator, or on the range check with its own message).
    const CommandResult r =
        run_command({bin_path("jalctl"), "telemetry", "--watch", "0.5", "--count", "1"},
                    {"JAL_EMU_DIR=/nonexistent-jal-test"}, std::chrono::seconds(30));
    EXPECT_EQ(r.err.find("not a finite number"), std::string::npos) << r.err;
    const CommandResult range =
        run_command({bin_path("jal-emu"), "--load-watts", "6000"}, {}, std::chrono::seconds(30));
    EXPECT_NE(range.exit_code, 0);
    EXPECT_NE(range.err.find("not in range"), std::string::npos) << range.err;
}

TEST(BadArguments, AnEmptyIdListIsAnErrorNotTheDefault)
{
    for (const char* option : {"--prompt-ids", "--force-ids"}) {
        SCOPED_TRACE(option);
        const CommandResult r =
            run_command({bin_path("jal-run"), option, ""}, {"JAL_EMU_DIR=/nonexistent-jal-test"},
                        std::chrono::seconds(60));
        EXPECT_NE(r.exit_code, 0);
        EXPECT_NE(r.err.find("no token ids given"), std::string::npos) << r.out << r.err;
    }
}

TEST(BadArguments, JalctlLoadRefusesWhatIsNotAFile)
{
    const CommandResult r =
        run_command({bin_path("jalctl"), "load", "/dev/null"},
                    {"JAL_EMU_DIR=/nonexistent-jal-test"}, std::chrono::seconds(30));
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("/dev/null: not a regular file"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
}

TEST(BadArguments, AGenerationLongerThanTheContextFailsBeforeItStarts)
{
    jal::test::EmuOptions o;
    o.extra_args = {"--fw", "native"};
    jal::test::EmuProcess emu(o);
    const CommandResult r = run_command({bin_path("jal-run"), "--n", "100000", "-q"}, {emu.env()},
                                        std::chrono::seconds(120));
    EXPECT_FALSE(r.timed_out);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("generated tokens need"), std::string::npos) << r.out << r.err;
    EXPECT_NE(r.err.find("the context holds"), std::string::npos) << r.err;
    EXPECT_EQ(emu.stop(), "");
}

}  // namespace
