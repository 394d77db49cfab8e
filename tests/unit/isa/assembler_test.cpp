// The assembler: the hand-written form (labels, arguments), jal-objdump listings back to
// the same bytes, and errors that name the line and column.
#include <string>

#include <gtest/gtest.h>

#include <jal/isa/assembler.hpp>
#include <jal/isa/code_object.hpp>
#include <jal/isa/disasm.hpp>

#include "good_object.hpp"

namespace {

using jal::isa::AsmResult;
using jal::isa::assemble;

jal::isa::CodeObjectView parsed(const AsmResult& r)
{
    jal::isa::CodeObjectView v;
    std::string why;
    EXPECT_EQ(jal::isa::parse_code_object(r.object, &v, &why), JAL_STATUS_OK) << why;
    return v;
}

TEST(Assembler, HandWrittenKernelWithLabelsAndArguments)
{
    const AsmResult r = assemble(R"(
; counts from 0 to n-1 into out[]
kernel count_up
l1_bytes 4096
arg u64 n
arg address out
    movsr x1, args
    ld x2, [x1]          ; n
    ld x3, [x1+8]        ; out
    li x4, 0
top: bge x4, x2, done
    st x4, [x3]
    addi x4, x4, 1
    jmp top
done:
    end
)");
    ASSERT_TRUE(r.ok()) << r.error.text();
    // The same object the tests' good_object() encodes by hand.
    EXPECT_EQ(r.object, jal::test::good_object());
    const jal::isa::CodeObjectView v = parsed(r);
    EXPECT_EQ(v.name, "count_up");
    EXPECT_EQ(v.header.args_size, 16u);
    ASSERT_EQ(v.args.size(), 2u);
    EXPECT_EQ(std::string(v.args[1].name), "out");
}

TEST(Assembler, AnObjdumpListingAssemblesToTheSameBytes)
{
    const std::vector<uint8_t> original = jal::test::good_object();
    const std::string listing = jal::isa::disassemble(original);
    const AsmResult r = assemble(listing);
    ASSERT_TRUE(r.ok()) << r.error.text() << "\n" << listing;
    EXPECT_EQ(r.object, original);
}

TEST(Assembler, AListingWhoseWordDisagreesWithItsTextIsRefused)
{
    std::string listing = jal::isa::disassemble(jal::test::good_object());
    const std::string from = "0000000000000000  li x4, 0";
    const size_t at = listing.find("li x4, 0");
    ASSERT_NE(at, std::string::npos) << listing;
    listing.replace(at, 8, "li x4, 7");
    const AsmResult r = assemble(listing);
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.error.message.find("the listing says"), std::string::npos) << r.error.text();
}

struct BadInput {
    const char* text;
    unsigned line, column;
    const char* message;
};

const BadInput kBad[] = {
    {"end\n", 1, 1, "no 'kernel NAME' line"},
    {"kernel k\n", 1, 1, "no instructions"},
    {"kernel k\n  frob x1\n", 2, 3, "unknown instruction 'frob'"},
    {"kernel k\n  add x1, x2, x40\n", 2, 15, "expected a scalar register (x0..x31), found 'x40'"},
    {"kernel k\n  add x1, x2\n", 2, 13, "missing operand: a register"},
    {"kernel k\n  add x1, x2, x3, x4\n", 2, 19, "unexpected operand 'x4'"},
    {"kernel k\n  li x1, 99999999999\n", 2, 10, "out of range"},
    {"kernel k\n  li x1, five\n", 2, 10, "expected an immediate (a number), found 'five'"},
    {"kernel k\n  jmp nowhere\n  end\n", 2, 7, "undefined label 'nowhere'"},
    {"kernel k\nx: end\nx: end\n", 3, 1, "label 'x' is defined twice"},
    {"kernel k\n  jmp @9\n", 2, 3, "branch target @9 is outside the code"},
    {"kernel k\n  ld x1, x2\n", 2, 10, "expected [xN] or [xN+offset]"},
    {"kernel k\n  tdesc t1, x2, x3, x4, f31\n", 2, 25, "expected a dtype"},
    {"kernel k\n  vtopk t1, t2, 0\n", 2, 17, "out of range 1.."},
    {"kernel k\narg pointer p\n  end\n", 2, 5, "expected an argument kind"},
    {"kernel k\n  5: 0000000000000000  end\n", 2, 3, "instruction 5 listed where instruction 0"},
    {"kernel k\n  isa 9.0, 80 bytes\n  end\n", 2, 7, "this assembler writes isa"},
    {"kernel k\n  trap 0\n", 2, 3, "trap"},
    {"kernel k\n  recvall t1, x2, q3, masked\n", 2, 23, "expected mask, found 'masked'"},
};

TEST(Assembler, ErrorsNameTheLineAndColumn)
{
    for (const BadInput& b : kBad) {
        const AsmResult r = assemble(b.text);
        ASSERT_FALSE(r.ok()) << b.text;
        EXPECT_TRUE(r.object.empty());
        EXPECT_EQ(r.error.line, b.line) << b.text << " -> " << r.error.text();
        EXPECT_EQ(r.error.column, b.column) << b.text << " -> " << r.error.text();
        EXPECT_NE(r.error.message.find(b.message), std::string::npos)
            << b.text << " -> " << r.error.text();
    }
    EXPECT_EQ(assemble("kernel k\n  frob\n").error.text(), "2:3: unknown instruction 'frob'");
}

}  // namespace
