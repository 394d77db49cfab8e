// The host side of dispatch that needs no device: argument buffer layout and the message
// of a failed dispatch report.
#include <bit>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jal/kernels/dispatch.hpp>

namespace {

uint64_t slot(const jal::kernels::Args& a, size_t i)
{
    uint64_t v;
    std::memcpy(&v, a.bytes().data() + i * 8, 8);
    return v;
}

TEST(Args, EightByteSlotsInOrder)
{
    jal::kernels::Args a;
    a.u64(0x1122334455667788ull).addr(0x200000000ull).f32(-2.5f).u64(0);
    ASSERT_EQ(a.size(), 32u);
    EXPECT_EQ(slot(a, 0), 0x1122334455667788ull);
    EXPECT_EQ(slot(a, 1), 0x200000000ull);
    EXPECT_EQ(slot(a, 2), uint64_t{std::bit_cast<uint32_t>(-2.5f)})
        << "f32 in the low word, high word zero";
    EXPECT_EQ(slot(a, 3), 0u);
    EXPECT_EQ(a.bytes()[0], 0x88) << "little-endian";
    EXPECT_TRUE(jal::kernels::Args().bytes().empty());
}

TEST(DispatchFailureMessage, NamesKernelSlicePcOpcodeAndInstruction)
{
    std::vector<uint64_t> code = {
        JAL_INSN(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_ARGS),
        JAL_INSN(JAL_OP_TLOAD, 2, 5, 6, 0, 1),
        JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0),
    };
    jal_dispatch_report r{};
    r.status = JAL_STATUS_PAGE_FAULT;
    r.fault_slice = 5;
    r.fault_pc = 1;
    r.fault_opcode = JAL_OP_TLOAD;
    r.fault_address = 0xdead000;
    EXPECT_EQ(jal::kernels::dispatch_failure_message("gemv", code, r),
              "kernel gemv: page fault in slice 5 at pc 1 (opcode 0x31 tload): tload t2, [x5], x6, "
              "q1 (address 0xdead000)");
}

TEST(DispatchFailureMessage, RefusedBeforeAnySliceRan)
{
    jal_dispatch_report r{};
    r.status = JAL_STATUS_INVALID_FIELD;
    r.fault_slice = ~0u;
    EXPECT_EQ(jal::kernels::dispatch_failure_message("k", {}, r),
              "kernel k: invalid field (before any slice ran: the code object or the dispatch was "
              "refused)");
}

TEST(DispatchFailureMessage, PcOutsideTheCodeStillNamesTheOpcode)
{
    jal_dispatch_report r{};
    r.status = JAL_STATUS_INVALID_OPCODE;
    r.fault_slice = 0;
    r.fault_pc = 9;
    r.fault_opcode = 0xee;
    EXPECT_EQ(jal::kernels::dispatch_failure_message("k", {}, r),
              "kernel k: invalid opcode in slice 0 at pc 9 (opcode 0xee unknown)");
}

}  // namespace
