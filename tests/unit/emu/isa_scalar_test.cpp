// The executor's scalar unit, control flow, device memory and faults, on hand-assembled
// programs (isa.h's JAL_INSN), against values computed here independently.
#include "isa_harness.hpp"

using namespace isatest;

namespace {

class IsaScalar : public IsaTest {};

TEST_F(IsaScalar, ArithmeticWrapsAndComparesAsDocumented)
{
    const std::vector<std::uint64_t> code = {
        LI(1, -1),  // x1 = 0xffff...ff
        LI(2, 2),
        R(JAL_OP_ADD, 3, 1, 2),  // wraps to 1
        R(JAL_OP_SUB, 4, 0, 2),  // -2
        R(JAL_OP_MUL, 5, 1, 2),  // -2 (wrapping)
        LI(6, 7),
        R(JAL_OP_DIVU, 7, 1, 6),  // 0xffff...ff / 7
        R(JAL_OP_REMU, 8, 1, 6),
        R(JAL_OP_SHL, 9, 6, 6),  // 7 << 7
        LI(10, 65),
        R(JAL_OP_SHL, 11, 6, 10),  // shift count & 63 = 1
        R(JAL_OP_SHR, 12, 1, 6),   // logical
        R(JAL_OP_SLT, 13, 1, 2),   // -1 < 2 signed
        R(JAL_OP_SLTU, 14, 1, 2),  // huge < 2 unsigned: 0
        R(JAL_OP_MIN, 15, 1, 2),
        R(JAL_OP_MAX, 16, 1, 2),
        LI(17, 0x12345678),
        LUI(17, static_cast<std::int32_t>(0x9abcdef0u)),
        ADDI(18, 0, -5),
        MULI(19, 6, -3),
        R(JAL_OP_AND, 20, 6, 10),
        R(JAL_OP_OR, 21, 6, 10),
        R(JAL_OP_XOR, 22, 6, 10),
        LI(0, 5),  // x0 stays 0
        END(),
    };
    const auto r = run(code);
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    const auto& x = r.slices.at(0).x;
    const std::uint64_t m1 = ~0ull;
    EXPECT_EQ(x[3], 1u);
    EXPECT_EQ(x[4], static_cast<std::uint64_t>(-2));
    EXPECT_EQ(x[5], static_cast<std::uint64_t>(-2));
    EXPECT_EQ(x[7], m1 / 7);
    EXPECT_EQ(x[8], m1 % 7);
    EXPECT_EQ(x[9], 7u << 7);
    EXPECT_EQ(x[11], 14u);
    EXPECT_EQ(x[12], m1 >> 7);
    EXPECT_EQ(x[13], 1u);
    EXPECT_EQ(x[14], 0u);
    EXPECT_EQ(x[15], m1);
    EXPECT_EQ(x[16], 2u);
    EXPECT_EQ(x[17], 0x9abcdef012345678ull);
    EXPECT_EQ(x[18], static_cast<std::uint64_t>(-5));
    EXPECT_EQ(x[19], static_cast<std::uint64_t>(-21));
    EXPECT_EQ(x[20], 7u & 65u);
    EXPECT_EQ(x[21], 7u | 65u);
    EXPECT_EQ(x[22], 7u ^ 65u);
    EXPECT_EQ(x[0], 0u);
    EXPECT_EQ(r.report.instructions, code.size());
}

TEST_F(IsaScalar, DivideByZeroFaultsWithInvalidField)
{
    const auto r = run({LI(1, 5), LI(2, 0), R(JAL_OP_DIVU, 3, 1, 2), END()});
    EXPECT_EQ(r.report.status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(r.report.fault_slice, 0u);
    EXPECT_EQ(r.report.fault_pc, 2u);
    EXPECT_EQ(r.report.fault_opcode, JAL_OP_DIVU);
    const auto r2 = run({LI(1, 5), R(JAL_OP_REMU, 3, 1, 0), END()});
    EXPECT_EQ(r2.report.status, JAL_STATUS_INVALID_FIELD);
}

TEST_F(IsaScalar, LoopsAndBranches)
{
    // x1 = sum of 1..100 with BLT; x5 counts taken BEQ/BNE/BGE/BLTU branches.
    const auto r = run({
        LI(1, 0),
        LI(2, 1),
        LI(3, 101),
        R(JAL_OP_ADD, 1, 1, 2),  // 3: loop
        ADDI(2, 2, 1),
        BR(JAL_OP_BLT, 2, 3, -2),
        LI(5, 0),
        LI(6, -1),
        BR(JAL_OP_BEQ, 0, 0, 2),
        ADDI(5, 5, 100),  // taken: skips
        BR(JAL_OP_BNE, 6, 0, 2),
        ADDI(5, 5, 100),  // taken
        BR(JAL_OP_BGE, 6, 0, 2),
        ADDI(5, 5, 1),  // -1 >= 0 signed: not taken
        BR(JAL_OP_BLTU, 0, 6, 2),
        ADDI(5, 5, 100),  // 0 < huge: taken
        JMP(2),
        ADDI(5, 5, 100),
        END(),
    });
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    EXPECT_EQ(r.slices[0].x[1], 5050u);
    EXPECT_EQ(r.slices[0].x[5], 1u);
}

TEST_F(IsaScalar, LoadsAndStoresThroughTheMmu)
{
    map(0, 1, 0);
    map(1, 1, 3);  // a second page on another slice
    const std::uint64_t args = kVa + 64;
    const std::uint64_t in = kVa + kPage - 8;  // a value at the end of page 0
    const std::uint64_t out = kVa + kPage + 16;
    const std::uint64_t a[2] = {in, out};
    write(args, a, sizeof a);
    const std::uint64_t v = 0x1122334455667788ull;
    write(in, &v, 8);
    Opts o;
    o.args = args;
    const auto r = run(
        {
            MOVSR(1, JAL_SR_ARGS),
            LD(2, 1, 0),
            LD(3, 1, 8),
            LD(4, 2),
            LW(5, 2),
            LW(6, 2, 4),
            ADDI(4, 4, 1),
            ST(4, 3),
            ST(5, 3, 8),
            END(),
        },
        o);
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    EXPECT_EQ(r.slices[0].x[5], 0x55667788u);
    EXPECT_EQ(r.slices[0].x[6], 0x11223344u);
    const auto got = read_vec<std::uint64_t>(out, 2);
    EXPECT_EQ(got[0], v + 1);
    EXPECT_EQ(got[1], 0x55667788u);
}

TEST_F(IsaScalar, UnmappedAddressIsAPageFaultNamingTheAddress)
{
    map(0, 1, 0);
    const std::uint64_t bad = kVa + 5 * kPage + 8;
    write(kVa, &bad, 8);
    Opts o;
    o.args = kVa;
    const auto r = run({MOVSR(1, JAL_SR_ARGS), LD(1, 1), LD(2, 1), END()}, o);
    EXPECT_EQ(r.report.status, JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(r.report.fault_address, bad);
    EXPECT_EQ(r.report.fault_opcode, JAL_OP_LD);
    // Misaligned: INVALID_FIELD.
    const auto m = run({MOVSR(1, JAL_SR_ARGS), LD(2, 1, 4), END()}, o);
    EXPECT_EQ(m.report.status, JAL_STATUS_INVALID_FIELD);
}

// PREFETCH (ISA 1.3) starts a line's fill and goes on: one cycle, where a load that misses
// stalls its 500 ns (1000 cycles at 2 GHz). A load of the line once the fill has landed hits;
// right after the PREFETCH it waits for the rest of the fill. Loads still read the values.
// An unmapped or misaligned address is no fault: a hint does nothing.
TEST_F(IsaScalar, APrefetchStartsALineFillWithoutAStall)
{
    map(0, 1, 0);
    const std::uint64_t v[2] = {41, 42};
    write(kVa + 128, &v[0], 8);
    write(kVa + 256, &v[1], 8);
    Opts o;
    o.args = kVa;
    const auto clock = [](unsigned r) { return MOVSR(r, JAL_SR_CLOCK); };
    const auto prefetch = [](unsigned ra, std::int32_t off) {
        return I(JAL_OP_PREFETCH, 0, ra, 0, 0, off);
    };
    auto program = [&](bool hint) {
        return std::vector<std::uint64_t>{MOVSR(1, JAL_SR_ARGS),
                                          clock(10),
                                          hint ? prefetch(1, 128) : ADDI(0, 0, 0),
                                          clock(11),
                                          LD(3, 1, 0),  // another line: a miss
                                          clock(12),
                                          LD(2, 1, 128),
                                          clock(13),
                                          prefetch(1, 256),
                                          clock(14),
                                          LD(4, 1, 256),
                                          clock(15),
                                          prefetch(1, 5 * static_cast<std::int32_t>(kPage)),
                                          prefetch(1, 3),
                                          END()};
    };
    const auto r = run(program(true), o);
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    const auto& x = r.slices[0].x;
    EXPECT_EQ(x[2], 41u);
    EXPECT_EQ(x[4], 42u);
    EXPECT_EQ(x[11] - x[10], 2u) << "the PREFETCH issued in one cycle";
    EXPECT_GE(x[12] - x[11], 1000u) << "a load that misses stalls";
    EXPECT_LT(x[13] - x[12], 20u) << "the prefetched line landed meanwhile: a hit";
    EXPECT_GE(x[15] - x[14], 990u) << "right after the PREFETCH, the rest of the fill";
    EXPECT_LT(x[15] - x[14], 1020u);
    const auto plain = run(program(false), o);
    ASSERT_EQ(plain.report.status, JAL_STATUS_OK);
    EXPECT_GE(plain.slices[0].x[13] - plain.slices[0].x[12], 1000u) << "no hint: a miss";
}

TEST_F(IsaScalar, BudgetExhaustedIsATimeout)
{
    Opts o;
    o.budget = 1000;
    const auto r = run({LI(1, 0), ADDI(1, 1, 1), JMP(-1), END()}, o);
    EXPECT_EQ(r.report.status, JAL_STATUS_TIMEOUT);
    EXPECT_EQ(r.report.instructions, 1000u);
    EXPECT_EQ(r.report.fault_slice, 0u);
}

TEST_F(IsaScalar, TrapFailsWithItsStatus)
{
    const auto r = run({LI(1, 1), I(JAL_OP_TRAP, 0, 0, 0, 0, JAL_STATUS_OUT_OF_RANGE), END()});
    EXPECT_EQ(r.report.status, JAL_STATUS_OUT_OF_RANGE);
    EXPECT_EQ(r.report.fault_pc, 1u);
    EXPECT_EQ(run({I(JAL_OP_TRAP, 0, 0, 0, 0, 9999)}).report.status, JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(run({I(0xee)}).report.status, JAL_STATUS_INVALID_OPCODE);
}

TEST_F(IsaScalar, SpecialRegisters)
{
    map(0, 1, 0);
    Opts o;
    o.slices = 3;
    o.first_physical = 4;
    o.args = kVa;
    const auto r =
        run({MOVSR(1, JAL_SR_SLICE), MOVSR(2, JAL_SR_NSLICES), MOVSR(3, JAL_SR_LOGICAL_SLICE),
             MOVSR(4, JAL_SR_ARGS), MOVSR(5, JAL_SR_TIMING_ONLY), MOVSR(6, JAL_SR_CLOCK), END()},
            o);
    ASSERT_EQ(r.report.status, JAL_STATUS_OK);
    for (std::uint32_t i = 0; i < 3; ++i) {
        EXPECT_EQ(r.slices[i].x[1], i);
        EXPECT_EQ(r.slices[i].x[2], 3u);
        EXPECT_EQ(r.slices[i].x[3], i);  // the harness numbers logical ids 0..n-1
        EXPECT_EQ(r.slices[i].x[4], kVa);
        EXPECT_EQ(r.slices[i].x[5], 0u);
        EXPECT_EQ(r.slices[i].x[6], 6u);  // six instructions issued, one a cycle
        EXPECT_EQ(r.slices[i].physical, 4 + i);
    }
}

}  // namespace
