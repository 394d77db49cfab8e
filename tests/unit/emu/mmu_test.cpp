// The device MMU: its register block as firmware drives it, and translation.
#include "emu/chip/mmu.hpp"
#include "jal/hw/chip.h"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

#include <gtest/gtest.h>

#include <array>

using jal::emu::Mmu;

namespace {

constexpr std::uint64_t kPage = JAL_PAGE_SIZE;
constexpr std::uint64_t kVa = JAL_VA_BASE;
std::uint64_t slice_pa(std::uint32_t slice, std::uint32_t page = 0)
{
    return slice * JAL_HBM_SLICE_BYTES + page * kPage;
}
constexpr std::uint32_t reg(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_MMU;
}

// Drives the block as firmware would.
std::uint32_t cmd(Mmu& m, std::uint32_t c, std::uint32_t ctx, std::uint64_t va,
                  std::uint64_t pa = 0, std::uint32_t flags = 0)
{
    m.fw_write(reg(JAL_MMU_CTX), ctx);
    m.fw_write(reg(JAL_MMU_VA_LO), static_cast<std::uint32_t>(va));
    m.fw_write(reg(JAL_MMU_VA_HI), static_cast<std::uint32_t>(va >> 32));
    m.fw_write(reg(JAL_MMU_PA_LO), static_cast<std::uint32_t>(pa));
    m.fw_write(reg(JAL_MMU_PA_HI), static_cast<std::uint32_t>(pa >> 32));
    m.fw_write(reg(JAL_MMU_FLAGS), flags);
    m.fw_write(reg(JAL_MMU_CMD), c);
    return m.fw_read(reg(JAL_MMU_STATUS));
}
std::uint64_t pa_reg(const Mmu& m)
{
    return m.fw_read(reg(JAL_MMU_PA_LO)) | (std::uint64_t{m.fw_read(reg(JAL_MMU_PA_HI))} << 32);
}

}  // namespace

TEST(Mmu, MapLookupUnmapThroughRegisters)
{
    Mmu m;
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_LOOKUP, 1, kVa), JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 1, kVa, slice_pa(5, 2)), JAL_STATUS_OK);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_LOOKUP, 1, kVa + 0x1234), JAL_STATUS_OK);
    EXPECT_EQ(pa_reg(m), slice_pa(5, 2) + 0x1234);
    // Replacing a mapping.
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 1, kVa, slice_pa(6)), JAL_STATUS_OK);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_LOOKUP, 1, kVa), JAL_STATUS_OK);
    EXPECT_EQ(pa_reg(m), slice_pa(6));
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_LOOKUP, 1, kVa, 0, 1), JAL_STATUS_OUT_OF_RANGE);  // no replica 1
    // Other contexts do not see it.
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_LOOKUP, 2, kVa), JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_UNMAP, 1, kVa), JAL_STATUS_OK);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_LOOKUP, 1, kVa), JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_UNMAP, 1, kVa), JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(cmd(m, 99, 1, kVa), JAL_STATUS_INVALID_OPCODE);
}

TEST(Mmu, RejectsBadFields)
{
    Mmu m;
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 0, kVa, 0), JAL_STATUS_INVALID_FIELD);  // ctx 0
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, JAL_MAX_CONTEXTS, kVa, 0),
              JAL_STATUS_INVALID_FIELD);                                             // ctx 64
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 1, kVa + 4096, 0), JAL_STATUS_INVALID_FIELD);  // VA unaligned
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 1, kVa, 4096), JAL_STATUS_INVALID_FIELD);      // PA unaligned
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 1, kVa, JAL_HBM_TOTAL_BYTES),
              JAL_STATUS_INVALID_FIELD);                                            // PA beyond HBM
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 1, kVa, 0, 0x80), JAL_STATUS_INVALID_FIELD);  // unknown flag
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_FLUSH_CTX, 0, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_LOOKUP, 70, kVa), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(m.mapped_pages(1), 0u);
}

TEST(Mmu, ReplicasAreTaggedWithTheirSlice)
{
    Mmu m;
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 3, kVa, slice_pa(10)), JAL_STATUS_OK);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 3, kVa, slice_pa(20), JAL_MMU_F_ADD_REPLICA), JAL_STATUS_OK);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 3, kVa, slice_pa(63, 5), JAL_MMU_F_ADD_REPLICA),
              JAL_STATUS_OK);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 3, kVa, slice_pa(20), JAL_MMU_F_ADD_REPLICA),
              JAL_STATUS_INVALID_FIELD);
    const std::array<std::uint64_t, 3> want{slice_pa(10), slice_pa(20), slice_pa(63, 5)};
    for (std::uint32_t i = 0; i < 3; ++i) {
        EXPECT_EQ(cmd(m, JAL_MMU_CMD_LOOKUP, 3, kVa + 64, 0, i), JAL_STATUS_OK);
        EXPECT_EQ(pa_reg(m), want[i] + 64);
    }
    std::vector<Mmu::Segment> segs;
    ASSERT_EQ(m.translate(3, kVa + 100, 10, 20, segs),
              JAL_STATUS_OK);  // slice 20 reads its own copy
    ASSERT_EQ(segs.size(), 1u);
    EXPECT_EQ(segs[0].pa, slice_pa(20) + 100);
    ASSERT_EQ(m.translate(3, kVa + 100, 10, 7, segs), JAL_STATUS_OK);  // no local copy: replica 0
    EXPECT_EQ(segs[0].pa, slice_pa(10) + 100);
    ASSERT_EQ(m.translate(3, kVa + 100, 10, -1, segs), JAL_STATUS_OK);
    EXPECT_EQ(segs[0].pa, slice_pa(10) + 100);
    // A plain MAP replaces every replica; UNMAP removes them all.
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 3, kVa, slice_pa(30)), JAL_STATUS_OK);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_LOOKUP, 3, kVa, 0, 1), JAL_STATUS_OUT_OF_RANGE);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP, 3, kVa, slice_pa(31), JAL_MMU_F_ADD_REPLICA), JAL_STATUS_OK);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_UNMAP, 3, kVa), JAL_STATUS_OK);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_LOOKUP, 3, kVa, 0, 0), JAL_STATUS_PAGE_FAULT);
}

TEST(Mmu, TranslateWalksPagesAndFaultsOnAnyHole)
{
    Mmu m;
    // Pages 0, 1, 2 contiguous physically, page 3 elsewhere, page 5 mapped, page 4 a hole.
    for (std::uint32_t i = 0; i < 3; ++i)
        ASSERT_EQ(m.map(1, kVa + i * kPage, slice_pa(2, i), false), JAL_STATUS_OK);
    ASSERT_EQ(m.map(1, kVa + 3 * kPage, slice_pa(9), false), JAL_STATUS_OK);
    ASSERT_EQ(m.map(1, kVa + 5 * kPage, slice_pa(9, 1), false), JAL_STATUS_OK);
    std::vector<Mmu::Segment> segs;
    ASSERT_EQ(m.translate(1, kVa + 10, 4 * kPage - 20, -1, segs), JAL_STATUS_OK);
    ASSERT_EQ(segs.size(), 2u);  // physically contiguous runs merge
    EXPECT_EQ(segs[0].pa, slice_pa(2) + 10);
    EXPECT_EQ(segs[0].len, 3 * kPage - 10);
    EXPECT_EQ(segs[1].pa, slice_pa(9));
    EXPECT_EQ(segs[1].len, kPage - 10);
    EXPECT_EQ(m.translate(1, kVa + 3 * kPage, kPage + 1, -1, segs),
              JAL_STATUS_PAGE_FAULT);  // one byte in the hole
    EXPECT_TRUE(segs.empty());
    EXPECT_EQ(m.translate(1, kVa - 1, 2, -1, segs), JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(m.translate(2, kVa, 1, -1, segs), JAL_STATUS_PAGE_FAULT);  // another context
    EXPECT_EQ(m.translate(0, kVa, 1, -1, segs), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(m.translate(1, ~0ull - 4, 16, -1, segs), JAL_STATUS_PAGE_FAULT);  // wraps
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_FLUSH_CTX, 1, 0), JAL_STATUS_OK);
    EXPECT_EQ(m.mapped_pages(1), 0u);
    EXPECT_EQ(m.translate(1, kVa, 1, -1, segs), JAL_STATUS_PAGE_FAULT);
}

TEST(Mmu, ResetClearsEveryContext)
{
    Mmu m;
    ASSERT_EQ(m.map(1, kVa, 0, false), JAL_STATUS_OK);
    ASSERT_EQ(m.map(63, kVa, kPage, false), JAL_STATUS_OK);
    m.reset();
    EXPECT_EQ(m.mapped_pages(1) + m.mapped_pages(63), 0u);
}
