// Runs the example program of docs/userlib.md (built from the document) against a jal-emu.
#include <gtest/gtest.h>

#include "fixture/run_command.hpp"
#include "runtime_fixture.hpp"

namespace {

class DocExample : public jal::test::EmuTest {
protected:
    jal::test::EmuOptions emu_options() const override
    {
        jal::test::EmuOptions o;
        o.extra_args = {"--fw", "native"};
        return o;
    }
};

TEST_F(DocExample, RunsAndSucceeds)
{
    auto r = jal::test::run_command({JAL_DOC_EXAMPLE}, {emu().env()}, std::chrono::seconds(120));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("round trip ok"), std::string::npos) << r.out << r.err;
}

}  // namespace
