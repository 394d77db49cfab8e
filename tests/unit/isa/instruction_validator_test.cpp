// validate_instruction: each role's range, unused fields, and immediates with a meaning.
#include <cctype>
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include <jal/isa/code_object.hpp>

namespace {

struct Case {
    const char* what;
    uint64_t word;
    jal_status status;
    const char* message;
};

const Case kBad[] = {
    {"unknown opcode", uint64_t{0x07} << 56, JAL_STATUS_INVALID_OPCODE,
     "opcode 0x07 is not in the ISA"},
    {"scalar register 32", JAL_INSN(JAL_OP_ADD, 1, 32, 3, 0, 0), JAL_STATUS_INVALID_FIELD,
     "add: field b is 32, not a scalar register (x0..x31)"},
    {"tile register 16", JAL_INSN(JAL_OP_MMA, 0, 1, 16, 0, 0), JAL_STATUS_INVALID_FIELD,
     "mma: field c is 16, not a tile register (t0..t15)"},
    {"mma layout 2", JAL_INSN(JAL_OP_MMA, 0, 1, 2, 0, 2), JAL_STATUS_INVALID_FIELD,
     "mma: layout 2 is not 0 or JAL_MMA_B_KMAJOR (1)"},
    {"semaphore field 16", JAL_INSN(JAL_OP_WAIT, 16, 0, 0, 0, 1), JAL_STATUS_INVALID_FIELD,
     "wait: field a is 16, not a semaphore (q0..q15)"},
    {"semaphore imm 16", JAL_INSN(JAL_OP_TLOAD, 1, 2, 3, 0, 16), JAL_STATUS_INVALID_FIELD,
     "tload: semaphore imm is 0x10, not a semaphore (q0..q15), optionally | JAL_DMA_STREAMED"},
    {"streamed semaphore 16", JAL_INSN(JAL_OP_TGATHER, 1, 2, 3, 4, 16 | JAL_DMA_STREAMED),
     JAL_STATUS_INVALID_FIELD, "tgather: semaphore imm is 0x110"},
    {"tload flag not streamed", JAL_INSN(JAL_OP_TLOAD, 1, 2, 3, 0, 0x200), JAL_STATUS_INVALID_FIELD,
     "tload: semaphore imm is 0x200"},
    {"group mask semaphore 16", JAL_INSN(JAL_OP_RECVALL, 1, 2, 0, 0, 16 | JAL_GROUP_MASK),
     JAL_STATUS_INVALID_FIELD,
     "recvall: semaphore imm is 0x110, not a semaphore (q0..q15), optionally | JAL_GROUP_MASK"},
    {"streamed store", JAL_INSN(JAL_OP_TSTORE, 1, 2, 3, 0, 1 | JAL_DMA_STREAMED),
     JAL_STATUS_INVALID_FIELD, "tstore: semaphore imm is 257, not a semaphore (q0..q15)"},
    {"unused field d", JAL_INSN(JAL_OP_ADD, 1, 2, 3, 4, 0), JAL_STATUS_INVALID_FIELD,
     "add: field d is 4, unused and must be zero"},
    {"prefetch with a register a", JAL_INSN(JAL_OP_PREFETCH, 2, 3, 0, 0, 64),
     JAL_STATUS_INVALID_FIELD, "prefetch: field a is 2, unused and must be zero"},
    {"unused imm", JAL_INSN(JAL_OP_VEXP, 1, 2, 0, 0, 5), JAL_STATUS_INVALID_FIELD,
     "vexp: imm is 0x5, unused"},
    {"jmp with a register", JAL_INSN(JAL_OP_JMP, 1, 0, 0, 0, 1), JAL_STATUS_INVALID_FIELD,
     "jmp: field a is 1"},
    {"tdesc dtype 0", JAL_INSN(JAL_OP_TDESC, 1, 2, 3, 4, JAL_TDESC_IMM(64, 0)),
     JAL_STATUS_INVALID_FIELD, "tdesc: dtype 0 is not a jal_dtype"},
    {"tdesc dtype 9", JAL_INSN(JAL_OP_TDESC, 1, 2, 3, 4, JAL_TDESC_IMM(0, 9)),
     JAL_STATUS_INVALID_FIELD, "dtype 9"},
    {"vcvt mode 2", JAL_INSN(JAL_OP_VCVT, 1, 2, 0, 0, 2), JAL_STATUS_INVALID_FIELD,
     "vcvt: conversion mode 2 is not a jal_cvt_mode"},
    {"vtopk k 0", JAL_INSN(JAL_OP_VTOPK, 1, 2, 0, 0, 0), JAL_STATUS_INVALID_FIELD, "vtopk: k is 0"},
    {"vtopkv k -1", JAL_INSN(JAL_OP_VTOPKV, 1, 2, 0, 0, -1), JAL_STATUS_INVALID_FIELD,
     "vtopkv: k is -1"},
    {"movsr unknown", JAL_INSN(JAL_OP_MOVSR, 1, 0, 0, 0, 8), JAL_STATUS_INVALID_FIELD,
     "movsr: special register 8 is not known"},
    {"trap ok", JAL_INSN(JAL_OP_TRAP, 0, 0, 0, 0, 0), JAL_STATUS_INVALID_FIELD, "trap: status 0"},
    {"trap unknown status", JAL_INSN(JAL_OP_TRAP, 0, 0, 0, 0, 999), JAL_STATUS_INVALID_FIELD,
     "trap: status 999"},
    {"wait negative", JAL_INSN(JAL_OP_WAIT, 1, 0, 0, 0, -1), JAL_STATUS_INVALID_FIELD,
     "wait: count -1"},
    {"tread negative column", JAL_INSN(JAL_OP_TREAD, 1, 2, 3, 0, -1), JAL_STATUS_INVALID_FIELD,
     "tread: column -1"},
    {"vmask negative window", JAL_INSN(JAL_OP_VMASK, 1, 2, 3, 0, -4), JAL_STATUS_INVALID_FIELD,
     "vmask: window -4"},
};

class BadInstruction : public testing::TestWithParam<Case> {};

TEST_P(BadInstruction, IsRejectedWithItsField)
{
    const Case& c = GetParam();
    std::string error;
    EXPECT_EQ(jal::isa::validate_instruction(c.word, &error), c.status) << c.what;
    EXPECT_NE(error.find(c.message), std::string::npos) << c.what << ": \"" << error << "\"";
    EXPECT_EQ(jal::isa::validate_instruction(c.word, nullptr), c.status) << c.what;
}

INSTANTIATE_TEST_SUITE_P(Cases, BadInstruction, testing::ValuesIn(kBad),
                         [](const testing::TestParamInfo<Case>& info) {
                             std::string n;
                             for (const char* p = info.param.what; *p; p++)
                                 n += std::isalnum(static_cast<unsigned char>(*p)) ? *p : '_';
                             return n;
                         });

TEST(InstructionValidator, AcceptsTheEdgesOfEachRange)
{
    const uint64_t good[] = {
        JAL_INSN(JAL_OP_ADD, 31, 31, 31, 0, 0),
        JAL_INSN(JAL_OP_MMA, 15, 15, 15, 0, 0),
        JAL_INSN(JAL_OP_WAIT, 15, 0, 0, 0, 0),
        JAL_INSN(JAL_OP_TLOAD, 15, 31, 31, 0, 15),
        JAL_INSN(JAL_OP_TDESC, 0, 0, 0, 0, JAL_TDESC_IMM(0x0fffffff, JAL_DT_I32)),
        JAL_INSN(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_TIMING_ONLY),
        JAL_INSN(JAL_OP_TRAP, 0, 0, 0, 0, JAL_STATUS_COUNT_ - 1),
        JAL_INSN(JAL_OP_LI, 1, 0, 0, 0, INT32_MIN),
        JAL_INSN(JAL_OP_BEQ, 0, 0, 0, 0, INT32_MIN),  // bounded only at object level
        JAL_INSN(JAL_OP_VTOPK, 0, 0, 0, 0, 1),
        JAL_INSN(JAL_OP_VCVT, 0, 0, 0, 0, JAL_CVT_GGML),
    };
    for (uint64_t w : good) {
        std::string error;
        EXPECT_EQ(jal::isa::validate_instruction(w, &error), JAL_STATUS_OK)
            << std::hex << w << ": " << error;
    }
}

}  // namespace
