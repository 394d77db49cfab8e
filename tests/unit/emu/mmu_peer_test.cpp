// The MMU's peer pages (interface 1.8): EXPORT publishes pages in the export table, MAP_REMOTE
// maps them on another chip after checking the table, accesses check the key every time,
// REVOKE ends them. Two MMUs joined by a fake fabric (a map of the exporter's HBM pages).
#include "emu/chip/mmu.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/chip.h"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

using jal::emu::Mmu;

namespace {

constexpr std::uint64_t kPage = JAL_PAGE_SIZE;
constexpr std::uint64_t kVa = JAL_VA_BASE;
constexpr std::uint32_t reg(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_MMU;
}

// A chip's HBM, sparse: 4 KiB blocks made on first touch.
struct FakeHbm {
    std::map<std::uint64_t, std::vector<std::byte>> blocks;
    std::byte* at(std::uint64_t a)
    {
        auto& b = blocks[a / 4096];
        if (b.empty()) b.resize(4096);
        return b.data() + a % 4096;
    }
    void write(std::uint64_t a, std::span<const std::byte> d)
    {
        for (std::size_t i = 0; i < d.size(); ++i) *at(a + i) = d[i];
    }
    void read(std::uint64_t a, std::span<std::byte> d)
    {
        for (std::size_t i = 0; i < d.size(); ++i) d[i] = *at(a + i);
    }
};

// Chips 0 (exporter) and 1 (importer); the link is 50 bytes/ns plus 1 µs, and can go down.
struct TwoChips {
    Mmu mmu[2];
    FakeHbm hbm[2];
    bool link_up = true;
    TwoChips()
    {
        for (std::uint32_t c = 0; c < 2; ++c) {
            Mmu::Fabric& f = mmu[c].fabric;
            f.self = [c] { return c; };
            f.table_write = [this, c](std::uint64_t pa, std::span<const std::byte> d) {
                hbm[c].write(pa, d);
            };
            f.read = [this](std::uint32_t chip, std::uint64_t pa, std::span<std::byte> d,
                            std::uint64_t& ns) -> std::uint32_t {
                if (!link_up || chip > 1) return JAL_STATUS_LINK_DOWN;
                hbm[chip].read(pa, d);
                ns += d.size() / 50 + 1000;
                return JAL_STATUS_OK;
            };
            f.write = [this](std::uint32_t chip, std::uint64_t pa, std::span<const std::byte> d,
                             std::uint64_t& ns) -> std::uint32_t {
                if (!link_up || chip > 1) return JAL_STATUS_LINK_DOWN;
                hbm[chip].write(pa, d);
                ns += d.size() / 50 + 1000;
                return JAL_STATUS_OK;
            };
        }
    }
};

std::uint32_t cmd(Mmu& m, std::uint32_t c, std::uint32_t ctx, std::uint64_t va, std::uint64_t pa,
                  std::uint32_t flags, std::uint32_t chip, std::uint32_t slot, std::uint64_t key)
{
    m.fw_write(reg(JAL_MMU_CTX), ctx);
    m.fw_write(reg(JAL_MMU_VA_LO), static_cast<std::uint32_t>(va));
    m.fw_write(reg(JAL_MMU_VA_HI), static_cast<std::uint32_t>(va >> 32));
    m.fw_write(reg(JAL_MMU_PA_LO), static_cast<std::uint32_t>(pa));
    m.fw_write(reg(JAL_MMU_PA_HI), static_cast<std::uint32_t>(pa >> 32));
    m.fw_write(reg(JAL_MMU_FLAGS), flags);
    m.fw_write(reg(JAL_MMU_CHIP), chip);
    m.fw_write(reg(JAL_MMU_SLOT), slot);
    m.fw_write(reg(JAL_MMU_KEY_LO), static_cast<std::uint32_t>(key));
    m.fw_write(reg(JAL_MMU_KEY_HI), static_cast<std::uint32_t>(key >> 32));
    m.fw_write(reg(JAL_MMU_CMD), c);
    return m.fw_read(reg(JAL_MMU_STATUS));
}
std::uint64_t key_reg(const Mmu& m)
{
    return m.fw_read(reg(JAL_MMU_KEY_LO)) | std::uint64_t{m.fw_read(reg(JAL_MMU_KEY_HI))} << 32;
}

// Chip 0 maps two pages of context 1 and exports them in `slot`; returns the key.
std::uint64_t export_two(TwoChips& t, std::uint32_t slot)
{
    EXPECT_EQ(t.mmu[0].map(1, kVa, 5 * kPage, false), JAL_STATUS_OK);
    EXPECT_EQ(t.mmu[0].map(1, kVa + kPage, 9 * kPage, false), JAL_STATUS_OK);
    EXPECT_EQ(cmd(t.mmu[0], JAL_MMU_CMD_EXPORT, 1, kVa, 0, 2, 0, slot, 0), JAL_STATUS_OK);
    return key_reg(t.mmu[0]);
}

}  // namespace

TEST(MmuPeer, ExportWritesTheTableEntryInHbm)
{
    TwoChips t;
    const std::uint64_t key = export_two(t, 3);
    EXPECT_NE(key, 0u);
    EXPECT_EQ(t.mmu[0].fw_read(reg(JAL_MMU_CHIP)), 0u);  // the exporter's domain id
    jal_export_entry e{};
    t.hbm[0].read(JAL_EXPORT_TABLE_PA + 3 * sizeof e, {reinterpret_cast<std::byte*>(&e), sizeof e});
    EXPECT_EQ(e.key, key);
    EXPECT_EQ(e.pages, 2u);
    EXPECT_EQ(e.pa[0], 5 * kPage);
    EXPECT_EQ(e.pa[1], 9 * kPage);
    // A second export of the same pages gets another key.
    EXPECT_EQ(cmd(t.mmu[0], JAL_MMU_CMD_EXPORT, 1, kVa, 0, 2, 0, 4, 0), JAL_STATUS_OK);
    EXPECT_NE(key_reg(t.mmu[0]), key);
}

TEST(MmuPeer, ExportRefusesWhatIsNotTheContextsOwnSinglePages)
{
    TwoChips t;
    Mmu& m = t.mmu[0];
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_EXPORT, 1, kVa, 0, 1, 0, 0, 0), JAL_STATUS_PAGE_FAULT);
    ASSERT_EQ(m.map(1, kVa, 5 * kPage, false), JAL_STATUS_OK);
    ASSERT_EQ(m.map(1, kVa, 7 * kPage, true), JAL_STATUS_OK);  // replicated
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_EXPORT, 1, kVa, 0, 1, 0, 0, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_EXPORT, 1, kVa, 0, 0, 0, 0, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_EXPORT, 1, kVa + 4096, 0, 1, 0, 0, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_EXPORT, 1, kVa, 0, JAL_EXPORT_MAX_PAGES + 1, 0, 0, 0),
              JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_EXPORT, 1, kVa, 0, 1, 0, JAL_MAX_EXPORTS, 0),
              JAL_STATUS_INVALID_FIELD);
    // Without a fabric there is no table to write.
    Mmu alone;
    ASSERT_EQ(alone.map(1, kVa, 5 * kPage, false), JAL_STATUS_OK);
    EXPECT_EQ(cmd(alone, JAL_MMU_CMD_EXPORT, 1, kVa, 0, 1, 0, 0, 0), JAL_STATUS_UNSUPPORTED);
}

TEST(MmuPeer, MapRemoteChecksThePeersTable)
{
    TwoChips t;
    const std::uint64_t key = export_two(t, 3);
    Mmu& m = t.mmu[1];
    const std::uint64_t va = kVa + 10 * kPage;
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP_REMOTE, 2, va, 0, 1, 0, 3, key), JAL_STATUS_OK);
    {
        Mmu::View v(m, 2);
        const Mmu::Page* p = v.find(va + 77);
        ASSERT_NE(p, nullptr);
        ASSERT_EQ(p->size(), 1u);
        EXPECT_TRUE(p->front().remote());
        EXPECT_EQ(p->front().chip, 0);
        EXPECT_EQ(p->front().pa, 9 * kPage);  // page 1 of the export
        EXPECT_EQ(p->front().slice, Mmu::kPeerSlice);
    }
    // Refused: a wrong key, a page beyond the export, an empty slot, this chip, no key.
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP_REMOTE, 2, va, 0, 0, 0, 3, key + 1), JAL_STATUS_PERMISSION);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP_REMOTE, 2, va, 0, 2, 0, 3, key), JAL_STATUS_PERMISSION);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP_REMOTE, 2, va, 0, 0, 0, 4, key), JAL_STATUS_PERMISSION);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP_REMOTE, 2, va, 0, 0, 1, 3, key), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP_REMOTE, 2, va, 0, 0, 0, 3, 0), JAL_STATUS_INVALID_FIELD);
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP_REMOTE, 2, va + 1, 0, 0, 0, 3, key), JAL_STATUS_INVALID_FIELD);
    // An unreachable chip.
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP_REMOTE, 2, va, 0, 0, 5, 3, key), JAL_STATUS_LINK_DOWN);
    // A remote page takes no local replica.
    EXPECT_EQ(m.map(2, va, 3 * kPage, true), JAL_STATUS_INVALID_FIELD);
    // Outside a domain, no remote page at all.
    Mmu alone;
    EXPECT_EQ(cmd(alone, JAL_MMU_CMD_MAP_REMOTE, 2, va, 0, 0, 0, 3, key), JAL_STATUS_UNSUPPORTED);
}

TEST(MmuPeer, AccessesMoveBytesAtTheLinksCostUntilRevoked)
{
    TwoChips t;
    const std::uint64_t key = export_two(t, 0);
    Mmu& m = t.mmu[1];
    ASSERT_EQ(cmd(m, JAL_MMU_CMD_MAP_REMOTE, 2, kVa, 0, 0, 0, 0, key), JAL_STATUS_OK);
    Mmu::Replica r = [&] {
        Mmu::View v(m, 2);
        return v.find(kVa)->front();
    }();

    std::vector<std::byte> out(10000), in(10000);
    for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::byte>(i * 7);
    std::uint64_t ns = 0;
    EXPECT_EQ(m.peer_write(r, 4096, in, &ns), JAL_STATUS_OK);
    EXPECT_GE(ns, in.size() / 50);
    EXPECT_EQ(std::memcmp(t.hbm[0].at(5 * kPage + 4096), in.data(), 4096), 0);
    EXPECT_EQ(m.peer_read(r, 4096, out), JAL_STATUS_OK);
    EXPECT_EQ(out, in);
    const Mmu::PeerStats s = m.peer_stats();
    EXPECT_EQ(s.accesses, 2u);
    EXPECT_EQ(s.bytes, 2 * in.size());
    EXPECT_GE(s.link_ns * 50, s.bytes);
    // An access that would cross the page is refused.
    EXPECT_EQ(m.peer_read(r, kPage - 10, std::span(out).first(11)), JAL_STATUS_INTERNAL);

    t.link_up = false;
    EXPECT_EQ(m.peer_read(r, 0, out), JAL_STATUS_LINK_DOWN);
    t.link_up = true;
    EXPECT_EQ(m.peer_stats().failures, 1u);

    // Revoked: the next access fails, and no byte moves either way.
    EXPECT_EQ(cmd(t.mmu[0], JAL_MMU_CMD_REVOKE, 0, 0, 0, 0, 0, 0, 0), JAL_STATUS_OK);
    std::fill(out.begin(), out.end(), std::byte{0});
    EXPECT_EQ(m.peer_read(r, 4096, out), JAL_STATUS_PERMISSION);
    EXPECT_EQ(out, std::vector<std::byte>(out.size()));
    std::vector<std::byte> other(100, std::byte{0x5a});
    EXPECT_EQ(m.peer_write(r, 0, other), JAL_STATUS_PERMISSION);
    EXPECT_NE(*t.hbm[0].at(5 * kPage), std::byte{0x5a});
    // Nor can it be mapped again.
    EXPECT_EQ(cmd(m, JAL_MMU_CMD_MAP_REMOTE, 2, kVa + kPage, 0, 0, 0, 0, key),
              JAL_STATUS_PERMISSION);
}
