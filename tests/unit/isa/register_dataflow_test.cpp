// registers_read_before_written: hand-made programs, and random ones against an explicit
// exploration of every (instruction, registers written so far) state the program can reach.
#include <cstdint>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include <jal/isa/code_object.hpp>

namespace {

using jal::isa::registers_read_before_written;

uint32_t bit(unsigned r)
{
    return uint32_t{1} << r;
}

TEST(RegisterDataflow, AWriteBeforeTheReadNeedsNoClear)
{
    const std::vector<uint64_t> code = {JAL_INSN(JAL_OP_LI, 3, 0, 0, 0, 7),
                                        JAL_INSN(JAL_OP_ADD, 4, 3, 5, 0, 0),
                                        JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0)};
    EXPECT_EQ(bit(5), registers_read_before_written(code));  // x3 written first, x5 never
}

TEST(RegisterDataflow, LuiReadsItsDestinationAndX0IsNeverCleared)
{
    const std::vector<uint64_t> code = {JAL_INSN(JAL_OP_LUI, 6, 0, 0, 0, 1),
                                        JAL_INSN(JAL_OP_ADD, 1, 0, 0, 0, 0),
                                        JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0)};
    EXPECT_EQ(bit(6), registers_read_before_written(code));
}

TEST(RegisterDataflow, AWriteOnOnePathOnlyStillNeedsTheClear)
{
    // x1 is tested, x2 written only when the branch falls through, then read after the join.
    const std::vector<uint64_t> code = {
        JAL_INSN(JAL_OP_BEQ, 1, 0, 0, 0, 2), JAL_INSN(JAL_OP_LI, 2, 0, 0, 0, 5),
        JAL_INSN(JAL_OP_ADDI, 3, 2, 0, 0, 1), JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0)};
    EXPECT_EQ(bit(1) | bit(2), registers_read_before_written(code));
}

TEST(RegisterDataflow, ALoopCarriedRegisterIsReadBeforeItsFirstWrite)
{
    // loop: x4 += 1 (read before written on the first pass); x5 set before the loop.
    const std::vector<uint64_t> code = {
        JAL_INSN(JAL_OP_LI, 5, 0, 0, 0, 10), JAL_INSN(JAL_OP_ADDI, 4, 4, 0, 0, 1),
        JAL_INSN(JAL_OP_BLT, 4, 5, 0, 0, -1), JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0)};
    EXPECT_EQ(bit(4), registers_read_before_written(code));
}

TEST(RegisterDataflow, TileAndSemaphoreFieldsAreNotScalarRegisters)
{
    // MMA t1 += t2 x t3 and WAIT q2 name no scalar register; TLOAD reads x7 and x8 only.
    const std::vector<uint64_t> code = {
        JAL_INSN(JAL_OP_MMA, 1, 2, 3, 0, 0), JAL_INSN(JAL_OP_WAIT, 2, 0, 0, 0, 1),
        JAL_INSN(JAL_OP_TLOAD, 4, 7, 8, 0, 0), JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0)};
    EXPECT_EQ(bit(7) | bit(8), registers_read_before_written(code));
}

TEST(RegisterDataflow, UnreachableCodeAndTargetsOutsideTheProgram)
{
    // A jump over an instruction that would read x9; a branch out of the program ends its
    // path; TRAP ends one too.
    const std::vector<uint64_t> code = {
        JAL_INSN(JAL_OP_JMP, 0, 0, 0, 0, 2), JAL_INSN(JAL_OP_ADDI, 1, 9, 0, 0, 0),
        JAL_INSN(JAL_OP_BNE, 10, 0, 0, 0, 100), JAL_INSN(JAL_OP_TRAP, 0, 0, 0, 0, 1),
        JAL_INSN(JAL_OP_ADDI, 1, 11, 0, 0, 0)};
    EXPECT_EQ(bit(10), registers_read_before_written(code));
}

TEST(RegisterDataflow, AnUnknownOpcodeReadsEveryRegisterItsFieldsName)
{
    const std::vector<uint64_t> code = {(uint64_t{0x07} << 56) | JAL_INSN(0, 1, 2, 3, 4, 0),
                                        JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0)};
    EXPECT_EQ(bit(1) | bit(2) | bit(3) | bit(4), registers_read_before_written(code));
}

// Every state (pc, registers written on the way there) reachable from (0, {x0}), branches
// taken both ways; a register is needed where a state reads it unwritten.
uint32_t explore(const std::vector<uint64_t>& code)
{
    struct Io {
        uint32_t reads, writes;
    };
    auto io = [](uint64_t w) -> Io {
        const unsigned a = JAL_INSN_A(w), b = JAL_INSN_B(w), c = JAL_INSN_C(w);
        switch (JAL_INSN_OPCODE(w)) {
        case JAL_OP_LI:
            return {0, bit(a)};
        case JAL_OP_LUI:
            return {bit(a), bit(a)};
        case JAL_OP_ADD:
        case JAL_OP_XOR:
            return {bit(b) | bit(c), bit(a)};
        case JAL_OP_ADDI:
        case JAL_OP_LD:
            return {bit(b), bit(a)};
        case JAL_OP_ST:
        case JAL_OP_BEQ:
        case JAL_OP_BLT:
            return {bit(a) | bit(b), 0};
        case JAL_OP_TLOAD:
            return {bit(b) | bit(c), 0};
        default:  // JMP, END, MMA
            return {0, 0};
        }
    };
    std::set<std::pair<size_t, uint32_t>> seen;
    std::vector<std::pair<size_t, uint32_t>> todo = {{0, 1}};
    uint32_t needed = 0;
    while (!todo.empty()) {
        auto [pc, w] = todo.back();
        todo.pop_back();
        if (pc >= code.size() || !seen.insert({pc, w}).second) continue;
        const uint64_t insn = code[pc];
        const Io e = io(insn);
        needed |= e.reads & ~w & ~1u;
        const uint32_t out = w | e.writes;
        const uint8_t op = JAL_INSN_OPCODE(insn);
        if (op == JAL_OP_END) continue;
        const int64_t target = int64_t(pc) + JAL_INSN_IMM(insn);
        if ((op == JAL_OP_BEQ || op == JAL_OP_BLT || op == JAL_OP_JMP) && target >= 0)
            todo.push_back({size_t(target), out});
        if (op != JAL_OP_JMP) todo.push_back({pc + 1, out});
    }
    return needed;
}

TEST(RegisterDataflow, RandomProgramsAgreeWithExploringEveryPath)
{
    std::mt19937 rng(11);
    const uint8_t ops[] = {JAL_OP_LI,  JAL_OP_LUI, JAL_OP_ADD, JAL_OP_XOR,   JAL_OP_ADDI,
                           JAL_OP_LD,  JAL_OP_ST,  JAL_OP_BEQ, JAL_OP_BLT,   JAL_OP_JMP,
                           JAL_OP_END, JAL_OP_MMA, JAL_OP_MMA, JAL_OP_TLOAD, JAL_OP_ADDI};
    int nonzero = 0;
    for (int p = 0; p < 2000; p++) {
        std::vector<uint64_t> code(4 + rng() % 14);
        for (size_t i = 0; i < code.size(); i++) {
            const uint8_t op = ops[rng() % std::size(ops)];
            auto reg = [&] { return rng() % 6; };  // x0..x5, often colliding
            const int32_t off = int32_t(rng() % 9) - 4;
            switch (op) {
            case JAL_OP_BEQ:
            case JAL_OP_BLT:
                code[i] = JAL_INSN(op, reg(), reg(), 0, 0, off);
                break;
            case JAL_OP_JMP:
                code[i] = JAL_INSN(op, 0, 0, 0, 0, off);
                break;
            case JAL_OP_END:
                code[i] = JAL_INSN(op, 0, 0, 0, 0, 0);
                break;
            case JAL_OP_TLOAD:
                code[i] = JAL_INSN(op, reg(), reg(), reg(), 0, 0);
                break;
            default:
                code[i] = JAL_INSN(op, reg(), reg(), reg(), 0, int32_t(rng() % 4));
                break;
            }
        }
        const uint32_t want = explore(code);
        nonzero += want != 0;
        ASSERT_EQ(want, registers_read_before_written(code)) << "program " << p;
    }
    EXPECT_GT(nonzero, 500);  // the comparison is not all empty sets
}

}  // namespace
