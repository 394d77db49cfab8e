// The disassembler: one golden line for every opcode of the ISA, invalid words, and the
// whole-object listing.
#include <bit>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include <jal/isa/assembler.hpp>
#include <jal/isa/code_object.hpp>
#include <jal/isa/disasm.hpp>

#include "good_object.hpp"

namespace {

using jal::isa::disassemble_instruction;

int32_t f(float v)
{
    return std::bit_cast<int32_t>(v);
}

struct Golden {
    uint64_t word;
    const char* text;
};

// Every instruction at pc 10 (branch targets print as absolute indices).
const Golden kGolden[] = {
    {JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0), "end"},
    {JAL_INSN(JAL_OP_LI, 1, 0, 0, 0, -5), "li x1, -5"},
    {JAL_INSN(JAL_OP_LUI, 1, 0, 0, 0, 0x12345678), "lui x1, 0x12345678"},
    {JAL_INSN(JAL_OP_MOVSR, 7, 0, 0, 0, JAL_SR_SLICE), "movsr x7, slice"},
    {JAL_INSN(JAL_OP_PREFETCH, 0, 3, 0, 0, 64), "prefetch [x3+64]"},
    {JAL_INSN(JAL_OP_PREFETCH, 0, 4, 0, 0, 0), "prefetch [x4]"},
    {JAL_INSN(JAL_OP_MOVSR, 7, 0, 0, 0, JAL_SR_DISPATCH_SLICE), "movsr x7, dispatch_slice"},
    {JAL_INSN(JAL_OP_ADD, 1, 2, 3, 0, 0), "add x1, x2, x3"},
    {JAL_INSN(JAL_OP_SUB, 1, 2, 3, 0, 0), "sub x1, x2, x3"},
    {JAL_INSN(JAL_OP_MUL, 1, 2, 3, 0, 0), "mul x1, x2, x3"},
    {JAL_INSN(JAL_OP_DIVU, 1, 2, 3, 0, 0), "divu x1, x2, x3"},
    {JAL_INSN(JAL_OP_REMU, 1, 2, 3, 0, 0), "remu x1, x2, x3"},
    {JAL_INSN(JAL_OP_AND, 1, 2, 3, 0, 0), "and x1, x2, x3"},
    {JAL_INSN(JAL_OP_OR, 1, 2, 3, 0, 0), "or x1, x2, x3"},
    {JAL_INSN(JAL_OP_XOR, 1, 2, 3, 0, 0), "xor x1, x2, x3"},
    {JAL_INSN(JAL_OP_SHL, 1, 2, 3, 0, 0), "shl x1, x2, x3"},
    {JAL_INSN(JAL_OP_SHR, 1, 2, 3, 0, 0), "shr x1, x2, x3"},
    {JAL_INSN(JAL_OP_SLT, 1, 2, 3, 0, 0), "slt x1, x2, x3"},
    {JAL_INSN(JAL_OP_SLTU, 1, 2, 3, 0, 0), "sltu x1, x2, x3"},
    {JAL_INSN(JAL_OP_MIN, 1, 2, 3, 0, 0), "min x1, x2, x3"},
    {JAL_INSN(JAL_OP_MAX, 31, 30, 0, 0, 0), "max x31, x30, x0"},
    {JAL_INSN(JAL_OP_ADDI, 1, 2, 0, 0, -1), "addi x1, x2, -1"},
    {JAL_INSN(JAL_OP_MULI, 1, 2, 0, 0, 24), "muli x1, x2, 24"},
    {JAL_INSN(JAL_OP_LD, 1, 2, 0, 0, 8), "ld x1, [x2+8]"},
    {JAL_INSN(JAL_OP_ST, 3, 4, 0, 0, -16), "st x3, [x4-16]"},
    {JAL_INSN(JAL_OP_LW, 1, 2, 0, 0, 0), "lw x1, [x2]"},
    {JAL_INSN(JAL_OP_BEQ, 1, 2, 0, 0, 3), "beq x1, x2, @13"},
    {JAL_INSN(JAL_OP_BNE, 1, 0, 0, 0, -10), "bne x1, x0, @0"},
    {JAL_INSN(JAL_OP_BLT, 1, 2, 0, 0, 1), "blt x1, x2, @11"},
    {JAL_INSN(JAL_OP_BGE, 1, 2, 0, 0, -2), "bge x1, x2, @8"},
    {JAL_INSN(JAL_OP_BLTU, 1, 2, 0, 0, 5), "bltu x1, x2, @15"},
    {JAL_INSN(JAL_OP_JMP, 0, 0, 0, 0, -4), "jmp @6"},
    {JAL_INSN(JAL_OP_TRAP, 0, 0, 0, 0, JAL_STATUS_PAGE_FAULT), "trap 19 (page fault)"},
    {JAL_INSN(JAL_OP_TDESC, 1, 2, 3, 4, JAL_TDESC_IMM(0, JAL_DT_F32)), "tdesc t1, x2, x3, x4, f32"},
    {JAL_INSN(JAL_OP_TDESC, 15, 2, 3, 4, JAL_TDESC_IMM(4096, JAL_DT_MXFP4)),
     "tdesc t15, x2, x3, x4, mxfp4, stride 4096"},
    {JAL_INSN(JAL_OP_TLOAD, 2, 5, 6, 0, 1), "tload t2, [x5], x6, q1"},
    {JAL_INSN(JAL_OP_TLOAD, 2, 5, 6, 0, 1 | JAL_DMA_STREAMED), "tload t2, [x5], x6, q1, streamed"},
    {JAL_INSN(JAL_OP_TSTORE, 2, 5, 6, 0, 15), "tstore t2, [x5], x6, q15"},
    {JAL_INSN(JAL_OP_TGATHER, 1, 2, 3, 4, 0), "tgather t1, [x2], x3, t4, q0"},
    {JAL_INSN(JAL_OP_TGATHER, 1, 2, 3, 4, 15 | JAL_DMA_STREAMED),
     "tgather t1, [x2], x3, t4, q15, streamed"},
    {JAL_INSN(JAL_OP_WAIT, 3, 0, 0, 0, 2), "wait q3, 2"},
    {JAL_INSN(JAL_OP_SIGNAL, 3, 0, 0, 0, 1), "signal q3, 1"},
    {JAL_INSN(JAL_OP_TREAD, 1, 2, 3, 0, 4), "tread x1, t2[x3, 4]"},
    {JAL_INSN(JAL_OP_TWRITE, 1, 2, 3, 0, 0), "twrite x1, t2[x3, 0]"},
    {JAL_INSN(JAL_OP_MMA, 0, 1, 2, 0, 0), "mma t0, t1, t2"},
    {JAL_INSN(JAL_OP_MMA, 3, 4, 5, 0, JAL_MMA_B_KMAJOR), "mma t3, t4, t5, kmajor"},
    {JAL_INSN(JAL_OP_VADD, 0, 1, 2, 0, 0), "vadd t0, t1, t2"},
    {JAL_INSN(JAL_OP_VSUB, 0, 1, 2, 0, 0), "vsub t0, t1, t2"},
    {JAL_INSN(JAL_OP_VMUL, 0, 1, 2, 0, 0), "vmul t0, t1, t2"},
    {JAL_INSN(JAL_OP_VMAX, 0, 1, 2, 0, 0), "vmax t0, t1, t2"},
    {JAL_INSN(JAL_OP_VMIN, 0, 1, 2, 0, 0), "vmin t0, t1, t2"},
    {JAL_INSN(JAL_OP_VFMA, 0, 1, 2, 0, 0), "vfma t0, t1, t2"},
    {JAL_INSN(JAL_OP_VSCALE, 0, 1, 0, 0, f(0.125f)), "vscale t0, t1, 0.125"},
    {JAL_INSN(JAL_OP_VADDS, 0, 1, 0, 0, f(-1.5f)), "vadds t0, t1, -1.5"},
    {JAL_INSN(JAL_OP_VEXP, 0, 1, 0, 0, 0), "vexp t0, t1"},
    {JAL_INSN(JAL_OP_VRSQRT, 0, 1, 0, 0, 0), "vrsqrt t0, t1"},
    {JAL_INSN(JAL_OP_VSILU, 0, 1, 0, 0, 0), "vsilu t0, t1"},
    {JAL_INSN(JAL_OP_VSIGMOID, 0, 1, 0, 0, 0), "vsigmoid t0, t1"},
    {JAL_INSN(JAL_OP_VRECIP, 0, 1, 0, 0, 0), "vrecip t0, t1"},
    {JAL_INSN(JAL_OP_VNEG, 0, 1, 0, 0, 0), "vneg t0, t1"},
    {JAL_INSN(JAL_OP_VCLAMP, 0, 1, 2, 3, 0), "vclamp t0, t1, x2, x3"},
    {JAL_INSN(JAL_OP_VREDSUM, 4, 5, 0, 0, 0), "vredsum t4, t5"},
    {JAL_INSN(JAL_OP_VREDMAX, 4, 5, 0, 0, 0), "vredmax t4, t5"},
    {JAL_INSN(JAL_OP_VARGMAX, 4, 5, 0, 0, 0), "vargmax t4, t5"},
    {JAL_INSN(JAL_OP_VTOPK, 4, 5, 0, 0, 4), "vtopk t4, t5, 4"},
    {JAL_INSN(JAL_OP_VCVT, 4, 5, 0, 0, JAL_CVT_GGML), "vcvt t4, t5, ggml"},
    {JAL_INSN(JAL_OP_VCOPY, 4, 5, 0, 0, 0), "vcopy t4, t5"},
    {JAL_INSN(JAL_OP_VFILL, 4, 0, 0, 0, f(1.0f)), "vfill t4, 0x3f800000"},
    {JAL_INSN(JAL_OP_VMASK, 4, 1, 2, 0, 128), "vmask t4, x1, x2, 128"},
    {JAL_INSN(JAL_OP_VTOPKV, 4, 5, 0, 0, 2), "vtopkv t4, t5, 2"},
    {JAL_INSN(JAL_OP_VIOTA, 4, 1, 2, 0, 0), "viota t4, x1, x2"},
    {JAL_INSN(JAL_OP_SEND, 1, 2, 0, 0, 3), "send t1, x2, q3"},
    {JAL_INSN(JAL_OP_RECV, 1, 2, 0, 0, 3), "recv t1, x2, q3"},
    {JAL_INSN(JAL_OP_SENDALL, 1, 2, 0, 0, 3), "sendall t1, x2, q3"},
    {JAL_INSN(JAL_OP_RECVALL, 1, 0, 0, 0, 4), "recvall t1, x0, q4"},
    {JAL_INSN(JAL_OP_SENDALL, 1, 2, 0, 0, 3 | JAL_GROUP_MASK), "sendall t1, x2, q3, mask"},
    {JAL_INSN(JAL_OP_RECVALL, 5, 6, 0, 0, 7 | JAL_GROUP_MASK), "recvall t5, x6, q7, mask"},
    {JAL_INSN(JAL_OP_BARRIER, 0, 0, 0, 0, 0), "barrier"},
    {JAL_INSN(JAL_OP_STAGE, 1, 2, 1, 0, 3), "stage x1, x2, ordered, @13"},
    {JAL_INSN(JAL_OP_ACQUIRE, 0, 0, 0, 0, 0), "acquire"},
};

TEST(Disassembler, GoldenLineForEveryOpcode)
{
    std::map<uint8_t, int> covered;
    for (const Golden& g : kGolden) {
        EXPECT_EQ(disassemble_instruction(g.word, 10), g.text);
        std::string error;
        EXPECT_EQ(jal::isa::validate_instruction(g.word, &error), JAL_STATUS_OK)
            << g.text << ": " << error;
        covered[JAL_INSN_OPCODE(g.word)]++;
    }
    for (uint8_t op : jal::isa::known_opcodes())
        EXPECT_TRUE(covered.count(op))
            << "no golden line for opcode " << int(op) << " (" << jal::isa::opcode_name(op) << ")";
    EXPECT_EQ(covered.size(), jal::isa::known_opcodes().size());
}

TEST(Disassembler, UnknownOpcodeIsARawWord)
{
    EXPECT_EQ(disassemble_instruction(0xff00000000000001ull, 0), ".word 0xff00000000000001");
    EXPECT_EQ(jal::isa::opcode_name(0xff), nullptr);
}

// The assembler is the disassembler's inverse: every golden line, at pc 10 of a program
// long enough for its branch target, assembles back to its word.
TEST(Assembler, EveryGoldenLineAssemblesBackToItsWord)
{
    for (const Golden& g : kGolden) {
        std::string text = "kernel golden\n";
        for (int pc = 0; pc < 20; ++pc) text += pc == 10 ? std::string(g.text) + "\n" : "end\n";
        const jal::isa::AsmResult r = jal::isa::assemble(text);
        ASSERT_TRUE(r.ok()) << g.text << ": " << r.error.text();
        jal::isa::CodeObjectView v;
        ASSERT_EQ(jal::isa::parse_code_object(r.object, &v, nullptr), JAL_STATUS_OK);
        EXPECT_EQ(v.code[10], g.word) << g.text;
    }
}

TEST(Disassembler, BadFieldIsDecodedAndFlagged)
{
    EXPECT_EQ(disassemble_instruction(JAL_INSN(JAL_OP_VTOPK, 1, 2, 0, 0, 0), 0),
              "vtopk t1, t2, 0  ; invalid: vtopk: k is 0, must be at least 1");
    EXPECT_EQ(disassemble_instruction(JAL_INSN(JAL_OP_MOVSR, 1, 0, 0, 0, 9), 0),
              "movsr x1, sr9  ; invalid: movsr: special register 9 is not known (0..7)");
}

TEST(Disassembler, ObjectListingHasHeaderArgsAndEveryInstruction)
{
    std::string text = jal::isa::disassemble(jal::test::good_object());
    EXPECT_EQ(text.find("invalid"), std::string::npos) << text;
    EXPECT_NE(text.find("kernel count_up"), std::string::npos) << text;
    EXPECT_NE(text.find("9 instructions, args_size 16, l1_bytes 4096"), std::string::npos) << text;
    EXPECT_NE(text.find("[   8] address out"), std::string::npos) << text;
    EXPECT_NE(text.find("      4: 2310200000000004  bge x4, x2, @8\n"), std::string::npos) << text;
    EXPECT_NE(text.find("      7: 25000000fffffffd  jmp @4\n"), std::string::npos) << text;
}

TEST(Disassembler, MalformedObjectListingStartsWithTheValidatorsMessage)
{
    auto bytes = jal::test::good_object();
    bytes[40] ^= 1;  // the CRC
    std::string text = jal::isa::disassemble(bytes);
    EXPECT_EQ(text.rfind("; invalid code object (invalid field): code_crc32", 0), 0u) << text;
    EXPECT_NE(text.find("bge x4, x2, @8"), std::string::npos) << text;
}

}  // namespace
