#include "emu/tile_exec/device_memory.hpp"

#include "emu/chip/hbm_memory.hpp"
#include "jal/hw/status.h"

#include <algorithm>
#include <cstring>

namespace jal::emu::exec {

namespace {
constexpr std::uint64_t kPage = Mmu::kPage;
}  // namespace

DeviceMemory::DeviceMemory(HbmMemory& hbm, const Mmu& mmu, std::uint32_t ctx)
    : mem_(hbm), hbm_(hbm.range(0, hbm.size()).data()), mmu_(mmu), ctx_(ctx)
{}

bool DeviceMemory::mapped(std::uint64_t va, std::uint64_t len) const
{
    if (len == 0) return true;
    Mmu::View v(mmu_, ctx_);
    return v.mapped(va, len);
}

std::uint32_t DeviceMemory::read(std::uint64_t va, void* dst, std::uint64_t len,
                                 std::uint32_t slice, Traffic& t, std::uint64_t& fault_va) const
{
    return Access(*this).read(va, dst, len, slice, t, fault_va);
}

std::uint32_t DeviceMemory::write(std::uint64_t va, const void* src, std::uint64_t len,
                                  std::uint32_t slice, Traffic& t, std::uint64_t& fault_va)
{
    return Access(*this).write(va, src, len, slice, t, fault_va);
}

DeviceMemory::Access::Access(const DeviceMemory& m)
    : mmu_(m.mmu_), mem_(m.mem_), hbm_(m.hbm_), view_(m.mmu_, m.ctx_)
{}

std::uint32_t DeviceMemory::Access::peer_run(const Mmu::Replica& r, std::uint64_t in_page,
                                             std::byte* out, const std::byte* in, std::uint64_t n,
                                             Traffic& t)
{
    t.peer += n;
    if (!out && !in) return JAL_STATUS_OK;
    std::uint64_t ns = 0;
    const std::uint32_t st =
        out ? mmu_.peer_read(r, in_page, {out, n}, &ns) : mmu_.peer_write(r, in_page, {in, n}, &ns);
    t.peer_ns += ns;
    return st;
}

const Mmu::Page* DeviceMemory::Access::find(std::uint64_t va)
{
    const std::uint64_t vpn = va / kPage;
    if (vpn != last_vpn_) {
        last_page_ = view_.find(va);
        last_vpn_ = vpn;
    }
    return last_page_;
}

bool DeviceMemory::Access::mapped_here(std::uint64_t va, std::uint64_t len)
{
    if (va + len < va) return false;
    for (std::uint64_t a = va; a < va + len; a = (a / kPage + 1) * kPage) {
        const Mmu::Page* p = find(a);
        if (!p) return false;
        for (const Mmu::Replica& r : *p)
            if (r.remote()) return false;
    }
    return true;
}

namespace {
// The replica read() takes for `slice`: its own, else the first.
const Mmu::Replica& nearest(const Mmu::Page& p, std::uint32_t slice)
{
    for (const Mmu::Replica& x : p)
        if (x.slice == slice) return x;
    return p.front();
}
}  // namespace

const std::byte* DeviceMemory::Access::host_run(std::uint64_t va, std::uint64_t len,
                                                std::uint32_t slice)
{
    if (len == 0 || va + len < va) return nullptr;
    std::uint64_t pa = 0;
    for (std::uint64_t a = va; a < va + len; a = (a / kPage + 1) * kPage) {
        const Mmu::Page* p = find(a);
        if (!p || p->front().remote()) return nullptr;
        const std::uint64_t at = nearest(*p, slice).pa + (a & (kPage - 1));
        if (a == va)
            pa = at;
        else if (at != pa + (a - va))
            return nullptr;
    }
    if (mem_.poisoned(pa, len)) return nullptr;
    return hbm_ + pa;
}

// Page run by page run: each run goes to (or comes from) one physical page.
std::uint32_t DeviceMemory::Access::read(std::uint64_t va, void* dst, std::uint64_t len,
                                         std::uint32_t slice, Traffic& t, std::uint64_t& fault_va)
{
    if (va + len < va) {
        fault_va = va;
        return JAL_STATUS_PAGE_FAULT;
    }
    auto* out = static_cast<std::byte*>(dst);
    for (std::uint64_t off = 0; off < len;) {
        const std::uint64_t a = va + off;
        const std::uint64_t n = std::min(len - off, kPage - (a & (kPage - 1)));
        const Mmu::Page* p = find(a);
        if (!p) {
            fault_va = a;
            return JAL_STATUS_PAGE_FAULT;
        }
        if (p->front().remote()) {
            const std::uint32_t st =
                peer_run(p->front(), a & (kPage - 1), out ? out + off : nullptr, nullptr, n, t);
            if (st != JAL_STATUS_OK) {
                fault_va = a;
                return st;
            }
            off += n;
            continue;
        }
        const Mmu::Replica* r = &nearest(*p, slice);
        // Only a read that takes the data sees the error (a mapping check or a timing-only
        // run moves none).
        if (out && mem_.poisoned(r->pa + (a & (kPage - 1)), n)) {
            fault_va = a;
            return JAL_STATUS_ECC_UNCORRECTED;
        }
        (r->slice == slice ? t.local : t.remote) += n;
        if (out) std::memcpy(out + off, hbm_ + r->pa + (a & (kPage - 1)), n);
        off += n;
    }
    return JAL_STATUS_OK;
}

std::uint32_t DeviceMemory::Access::write(std::uint64_t va, const void* src, std::uint64_t len,
                                          std::uint32_t slice, Traffic& t, std::uint64_t& fault_va)
{
    if (va + len < va) {
        fault_va = va;
        return JAL_STATUS_PAGE_FAULT;
    }
    const auto* in = static_cast<const std::byte*>(src);
    for (std::uint64_t off = 0; off < len;) {
        const std::uint64_t a = va + off;
        const std::uint64_t n = std::min(len - off, kPage - (a & (kPage - 1)));
        const Mmu::Page* p = find(a);
        if (!p) {
            fault_va = a;
            return JAL_STATUS_PAGE_FAULT;
        }
        for (const Mmu::Replica& r : *p) {
            if (r.remote()) {
                const std::uint32_t st =
                    peer_run(r, a & (kPage - 1), nullptr, in ? in + off : nullptr, n, t);
                if (st != JAL_STATUS_OK) {
                    fault_va = a;
                    return st;
                }
                continue;
            }
            (r.slice == slice ? t.local : t.remote) += n;
            if (in) std::memcpy(hbm_ + r.pa + (a & (kPage - 1)), in + off, n);
        }
        off += n;
    }
    return JAL_STATUS_OK;
}

}  // namespace jal::emu::exec
