// Runs c_api_program.c (compiled as C) against a jal-emu: API 1.3 from C.
#include <gtest/gtest.h>

#include "fixture/run_command.hpp"
#include "runtime_fixture.hpp"

namespace {

class CProgram : public jal::test::EmuTest {
protected:
    jal::test::EmuOptions emu_options() const override
    {
        jal::test::EmuOptions o;
        o.extra_args = {"--fw", "native"};
        return o;
    }
};

TEST_F(CProgram, UsesMemoryInfoTelemetryKernelsTimestampsAndTheProfiler)
{
    auto r = jal::test::run_command({JAL_C_PROGRAM}, {emu().env()}, std::chrono::seconds(120));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("c api ok"), std::string::npos) << r.out << r.err;
}

}  // namespace
