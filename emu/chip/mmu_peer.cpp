// The MMU's peer pages (interface 1.8): the export table in this chip's HBM, remote pages
// mapped from a peer's table, and accesses to them over the chip's fabric ports. Why the
// table lives in HBM: a peer in another process reaches this chip only through its HBM
// registered with libfabric, so a check every access makes must read something there.
#include "emu/chip/mmu.hpp"

#include "jal/hw/status.h"

#include <cstddef>
#include <cstring>
#include <mutex>

namespace jal::emu {

namespace {

constexpr std::uint64_t slot_pa(std::uint32_t slot)
{
    return JAL_EXPORT_TABLE_PA + std::uint64_t{slot} * sizeof(jal_export_entry);
}

}  // namespace

std::uint32_t Mmu::export_pages(std::uint32_t ctx, std::uint64_t va, std::uint32_t pages,
                                std::uint32_t slot, std::uint64_t& key)
{
    if (!valid_ctx(ctx) || (va % kPage) || pages == 0 || pages > JAL_EXPORT_MAX_PAGES ||
        slot >= JAL_MAX_EXPORTS)
        return JAL_STATUS_INVALID_FIELD;
    if (!fabric.table_write) return JAL_STATUS_UNSUPPORTED;
    jal_export_entry e{};
    {
        View v(*this, ctx);
        for (std::uint32_t i = 0; i < pages; ++i) {
            const Page* p = v.find(va + std::uint64_t{i} * kPage);
            if (!p) return JAL_STATUS_PAGE_FAULT;
            // A replicated page would need every replica written; a remote one is not ours.
            if (p->size() != 1 || p->front().remote()) return JAL_STATUS_INVALID_FIELD;
            e.pa[i] = p->front().pa;
        }
    }
    do key = keys_();
    while (key == 0);
    e.key = key;
    e.pages = pages;
    fabric.table_write(slot_pa(slot), {reinterpret_cast<const std::byte*>(&e), sizeof e});
    return JAL_STATUS_OK;
}

std::uint32_t Mmu::revoke(std::uint32_t slot)
{
    if (slot >= JAL_MAX_EXPORTS) return JAL_STATUS_INVALID_FIELD;
    if (!fabric.table_write) return JAL_STATUS_UNSUPPORTED;
    const jal_export_entry e{};
    fabric.table_write(slot_pa(slot), {reinterpret_cast<const std::byte*>(&e), sizeof e});
    return JAL_STATUS_OK;
}

std::uint32_t Mmu::map_remote(std::uint32_t ctx, std::uint64_t va, std::uint32_t chip,
                              std::uint32_t slot, std::uint32_t page, std::uint64_t key)
{
    if (!valid_ctx(ctx) || (va % kPage) || slot >= JAL_MAX_EXPORTS ||
        page >= JAL_EXPORT_MAX_PAGES || key == 0 || chip > 0x7fffffffu)
        return JAL_STATUS_INVALID_FIELD;
    if (!fabric.read || !fabric.self || fabric.self() == ~0u) return JAL_STATUS_UNSUPPORTED;
    if (chip == fabric.self()) return JAL_STATUS_INVALID_FIELD;
    // The slot's head and the one page address, straight from the peer's table.
    struct {
        std::uint64_t key;
        std::uint32_t pages, reserved;
    } head{};
    std::uint64_t pa = 0, ns = 0;
    std::uint32_t st =
        fabric.read(chip, slot_pa(slot), {reinterpret_cast<std::byte*>(&head), 16}, ns);
    if (st == JAL_STATUS_OK)
        st = fabric.read(chip, slot_pa(slot) + offsetof(jal_export_entry, pa) + 8ull * page,
                         {reinterpret_cast<std::byte*>(&pa), 8}, ns);
    if (st != JAL_STATUS_OK) return st;
    if (head.key != key || page >= head.pages || (pa % kPage) || pa >= JAL_HBM_TOTAL_BYTES)
        return JAL_STATUS_PERMISSION;
    Context& c = ctx_[ctx];
    std::unique_lock lock(c.mutex);
    Page& p = c.pages[va / kPage];
    p.clear();
    p.push_back(Replica{pa, kPeerSlice, static_cast<std::int32_t>(chip), slot, key});
    return JAL_STATUS_OK;
}

std::uint32_t Mmu::check_key(const Replica& r) const
{
    std::uint64_t key = 0, ns = 0;
    const std::uint32_t st = fabric.read(static_cast<std::uint32_t>(r.chip), slot_pa(r.slot),
                                         {reinterpret_cast<std::byte*>(&key), 8}, ns);
    if (st != JAL_STATUS_OK) return st;
    return key == r.key ? std::uint32_t{JAL_STATUS_OK} : std::uint32_t{JAL_STATUS_PERMISSION};
}

void Mmu::peer_done(std::uint32_t status, std::uint64_t bytes, std::uint64_t ns) const
{
    peer_accesses_.fetch_add(1, std::memory_order_relaxed);
    if (status != JAL_STATUS_OK) {
        peer_failures_.fetch_add(1, std::memory_order_relaxed);
        return;
    }
    peer_bytes_.fetch_add(bytes, std::memory_order_relaxed);
    peer_ns_.fetch_add(ns, std::memory_order_relaxed);
}

std::uint32_t Mmu::peer_read(const Replica& r, std::uint64_t off, std::span<std::byte> out,
                             std::uint64_t* link_ns) const
{
    if (!r.remote() || !fabric.read || off + out.size() > kPage) return JAL_STATUS_INTERNAL;
    std::uint64_t ns = 0;
    std::uint32_t st = check_key(r);
    if (st == JAL_STATUS_OK)
        st = fabric.read(static_cast<std::uint32_t>(r.chip), r.pa + off, out, ns);
    peer_done(st, out.size(), ns);
    if (link_ns) *link_ns += ns;
    return st;
}

std::uint32_t Mmu::peer_write(const Replica& r, std::uint64_t off, std::span<const std::byte> in,
                              std::uint64_t* link_ns) const
{
    if (!r.remote() || !fabric.write || off + in.size() > kPage) return JAL_STATUS_INTERNAL;
    std::uint64_t ns = 0;
    std::uint32_t st = check_key(r);
    if (st == JAL_STATUS_OK)
        st = fabric.write(static_cast<std::uint32_t>(r.chip), r.pa + off, in, ns);
    peer_done(st, in.size(), ns);
    if (link_ns) *link_ns += ns;
    return st;
}

Mmu::PeerStats Mmu::peer_stats() const
{
    return {peer_accesses_.load(), peer_bytes_.load(), peer_ns_.load(), peer_failures_.load()};
}

}  // namespace jal::emu
