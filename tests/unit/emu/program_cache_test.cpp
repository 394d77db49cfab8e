// The dispatch unit's cache of decoded code objects: a hit only for the same bytes in the
// same context, a changed byte decodes again, and an object that does not parse is refused
// every time.
#include "emu/cp/program_cache.hpp"

#include "jal/hw/isa.h"
#include "jal/hw/status.h"

#include <gtest/gtest.h>
#include <jal/isa/code_object.hpp>

#include <cstdint>
#include <vector>

namespace {

std::vector<std::uint8_t> object(std::int32_t imm)
{
    const std::uint64_t code[] = {JAL_INSN(JAL_OP_LI, 1, 0, 0, 0, imm),
                                  JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0)};
    return jal::isa::encode_code_object("k", code, 0, JAL_SLICE_L1_BYTES, {});
}

}  // namespace

TEST(ProgramCache, SameBytesSameProgramOtherBytesDecodedAgain)
{
    jal::emu::ProgramCache cache;
    std::uint32_t st = 0;
    const auto a = cache.get(1, object(5), st);
    ASSERT_EQ(st, JAL_STATUS_OK);
    ASSERT_TRUE(a);
    ASSERT_EQ(a->code.size(), 2u);
    EXPECT_EQ(a->code[0].imm, 5);
    EXPECT_EQ(cache.get(1, object(5), st), a);
    const auto b = cache.get(1, object(6), st);
    ASSERT_TRUE(b);
    EXPECT_NE(b, a);
    EXPECT_EQ(b->code[0].imm, 6);
    EXPECT_EQ(cache.get(1, object(5), st), a);  // both kept
}

TEST(ProgramCache, ContextsDoNotShareEntries)
{
    jal::emu::ProgramCache cache;
    std::uint32_t st = 0;
    const auto a = cache.get(1, object(5), st);
    const auto b = cache.get(2, object(5), st);
    ASSERT_TRUE(a && b);
    EXPECT_NE(a, b);
    EXPECT_EQ(b->code[0].imm, 5);
    EXPECT_EQ(cache.get(2, object(5), st), b);
}

TEST(ProgramCache, AnObjectThatDoesNotParseIsRefusedEveryTime)
{
    jal::emu::ProgramCache cache;
    std::vector<std::uint8_t> bad = object(7);
    bad.back() ^= 1;  // the CRC no longer matches
    for (int i = 0; i < 2; ++i) {
        std::uint32_t st = JAL_STATUS_OK;
        EXPECT_EQ(cache.get(1, bad, st), nullptr);
        EXPECT_NE(st, JAL_STATUS_OK);
    }
}

TEST(ProgramCache, KeepsWorkingPastItsCapacity)
{
    jal::emu::ProgramCache cache;
    std::uint32_t st = 0;
    for (std::int32_t i = 0; i < 200; ++i) {
        const auto p = cache.get(1, object(i), st);
        ASSERT_TRUE(p);
        EXPECT_EQ(p->code[0].imm, i);
        EXPECT_EQ(cache.get(1, object(i), st), p);
    }
}

TEST(ProgramCache, KeepsLargeObjectsWithinItsByteBudget)
{
    // Objects of 512 KiB (a staged layer program can be hundreds of KiB): each hits after
    // its first decode, and 200 of them (100 MiB) do not break the cache.
    std::vector<std::uint64_t> code(64 * 1024, JAL_INSN(JAL_OP_LI, 1, 0, 0, 0, 0));
    code.back() = JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0);
    jal::emu::ProgramCache cache;
    std::uint32_t st = 0;
    for (std::int32_t i = 0; i < 200; ++i) {
        code[0] = JAL_INSN(JAL_OP_LI, 1, 0, 0, 0, i);
        const auto bytes = jal::isa::encode_code_object("big", code, 0, JAL_SLICE_L1_BYTES, {});
        const auto p = cache.get(1, bytes, st);
        ASSERT_TRUE(p);
        EXPECT_EQ(p->code[0].imm, i);
        EXPECT_EQ(cache.get(1, bytes, st), p) << "kept: the same program again";
    }
}
