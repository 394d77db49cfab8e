#include "emu/chip/mmu.hpp"

#include "jal/hw/chip.h"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

#include <algorithm>
#include <mutex>

namespace jal::emu {

namespace {
constexpr std::uint32_t reg(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_MMU;
}
constexpr std::uint64_t kPageMask = Mmu::kPage - 1;
}  // namespace

std::uint32_t Mmu::fw_read(std::uint32_t off) const
{
    switch (off) {
    case reg(JAL_MMU_CTX):
        return r_ctx_;
    case reg(JAL_MMU_VA_LO):
        return static_cast<std::uint32_t>(r_va_);
    case reg(JAL_MMU_VA_HI):
        return static_cast<std::uint32_t>(r_va_ >> 32);
    case reg(JAL_MMU_PA_LO):
        return static_cast<std::uint32_t>(r_pa_);
    case reg(JAL_MMU_PA_HI):
        return static_cast<std::uint32_t>(r_pa_ >> 32);
    case reg(JAL_MMU_FLAGS):
        return r_flags_;
    case reg(JAL_MMU_STATUS):
        return r_status_;
    case reg(JAL_MMU_CHIP):
        return r_chip_;
    case reg(JAL_MMU_SLOT):
        return r_slot_;
    case reg(JAL_MMU_KEY_LO):
        return static_cast<std::uint32_t>(r_key_);
    case reg(JAL_MMU_KEY_HI):
        return static_cast<std::uint32_t>(r_key_ >> 32);
    default:
        return 0;
    }
}

void Mmu::fw_write(std::uint32_t off, std::uint32_t v)
{
    auto lo = [](std::uint64_t& r, std::uint32_t x) { r = (r & ~0xffffffffull) | x; };
    auto hi = [](std::uint64_t& r, std::uint32_t x) {
        r = (r & 0xffffffffull) | (std::uint64_t{x} << 32);
    };
    switch (off) {
    case reg(JAL_MMU_CTX):
        r_ctx_ = v;
        break;
    case reg(JAL_MMU_VA_LO):
        lo(r_va_, v);
        break;
    case reg(JAL_MMU_VA_HI):
        hi(r_va_, v);
        break;
    case reg(JAL_MMU_PA_LO):
        lo(r_pa_, v);
        break;
    case reg(JAL_MMU_PA_HI):
        hi(r_pa_, v);
        break;
    case reg(JAL_MMU_FLAGS):
        r_flags_ = v;
        break;
    case reg(JAL_MMU_CHIP):
        r_chip_ = v;
        break;
    case reg(JAL_MMU_SLOT):
        r_slot_ = v;
        break;
    case reg(JAL_MMU_KEY_LO):
        lo(r_key_, v);
        break;
    case reg(JAL_MMU_KEY_HI):
        hi(r_key_, v);
        break;
    case reg(JAL_MMU_CMD):
        fw_command(v);
        break;
    default:
        break;
    }
}

void Mmu::fw_command(std::uint32_t cmd)
{
    switch (cmd) {
    case JAL_MMU_CMD_MAP:
        r_status_ = (r_flags_ & ~JAL_MMU_F_ADD_REPLICA)
                        ? std::uint32_t{JAL_STATUS_INVALID_FIELD}
                        : map(r_ctx_, r_va_, r_pa_, r_flags_ & JAL_MMU_F_ADD_REPLICA);
        break;
    case JAL_MMU_CMD_UNMAP:
        r_status_ = unmap(r_ctx_, r_va_);
        break;
    case JAL_MMU_CMD_LOOKUP: {
        std::uint64_t pa = 0;
        r_status_ = lookup(r_ctx_, r_va_, r_flags_, pa);
        if (r_status_ == JAL_STATUS_OK) r_pa_ = pa;
        break;
    }
    case JAL_MMU_CMD_FLUSH_CTX:
        r_status_ = flush(r_ctx_);
        break;
    case JAL_MMU_CMD_SCRUB:
        r_status_ = scrub(r_pa_);
        break;
    case JAL_MMU_CMD_EXPORT:
        r_status_ = export_pages(r_ctx_, r_va_, r_flags_, r_slot_, r_key_);
        r_chip_ = fabric.self ? fabric.self() : ~0u;
        break;
    case JAL_MMU_CMD_REVOKE:
        r_status_ = revoke(r_slot_);
        break;
    case JAL_MMU_CMD_MAP_REMOTE:
        r_status_ = map_remote(r_ctx_, r_va_, r_chip_, r_slot_, r_flags_, r_key_);
        break;
    default:
        r_status_ = JAL_STATUS_INVALID_OPCODE;
        break;
    }
}

std::uint32_t Mmu::map(std::uint32_t ctx, std::uint64_t va, std::uint64_t pa, bool add_replica)
{
    if (!valid_ctx(ctx) || (va & kPageMask) || (pa & kPageMask) || pa >= JAL_HBM_TOTAL_BYTES)
        return JAL_STATUS_INVALID_FIELD;
    const Replica r{pa, jal_slice_of_channel(jal_hbm_channel_of(pa))};
    Context& c = ctx_[ctx];
    std::unique_lock lock(c.mutex);
    Page& page = c.pages[va / kPage];
    if (add_replica && !page.empty() && page.front().remote())
        return JAL_STATUS_INVALID_FIELD;  // a peer's page has no replicas here
    if (!add_replica) page.clear();
    if (std::any_of(page.begin(), page.end(), [&](const Replica& x) { return x.pa == pa; }))
        return JAL_STATUS_INVALID_FIELD;  // the same physical page twice
    if (page.size() >= kMaxReplicas) return JAL_STATUS_OUT_OF_RANGE;
    page.push_back(r);
    return JAL_STATUS_OK;
}

std::uint32_t Mmu::unmap(std::uint32_t ctx, std::uint64_t va)
{
    if (!valid_ctx(ctx) || (va & kPageMask)) return JAL_STATUS_INVALID_FIELD;
    Context& c = ctx_[ctx];
    std::unique_lock lock(c.mutex);
    return c.pages.erase(va / kPage) ? JAL_STATUS_OK : JAL_STATUS_PAGE_FAULT;
}

std::uint32_t Mmu::lookup(std::uint32_t ctx, std::uint64_t va, std::uint32_t replica,
                          std::uint64_t& pa) const
{
    if (!valid_ctx(ctx)) return JAL_STATUS_INVALID_FIELD;
    View v(*this, ctx);
    const Page* p = v.find(va);
    if (!p) return JAL_STATUS_PAGE_FAULT;
    if (replica >= p->size()) return JAL_STATUS_OUT_OF_RANGE;
    pa = (*p)[replica].pa + (va & kPageMask);
    return JAL_STATUS_OK;
}

std::uint32_t Mmu::flush(std::uint32_t ctx)
{
    if (!valid_ctx(ctx)) return JAL_STATUS_INVALID_FIELD;
    Context& c = ctx_[ctx];
    std::unique_lock lock(c.mutex);
    c.pages.clear();
    return JAL_STATUS_OK;
}

std::uint32_t Mmu::scrub(std::uint64_t pa)
{
    if ((pa & kPageMask) || pa >= JAL_HBM_TOTAL_BYTES) return JAL_STATUS_INVALID_FIELD;
    if (!on_scrub) return JAL_STATUS_UNSUPPORTED;
    on_scrub(pa);
    return JAL_STATUS_OK;
}

void Mmu::reset()
{
    for (std::uint32_t ctx = 1; ctx < JAL_MAX_CONTEXTS; ++ctx) flush(ctx);
    r_ctx_ = r_flags_ = r_status_ = r_chip_ = r_slot_ = 0;
    r_va_ = r_pa_ = r_key_ = 0;
}

std::size_t Mmu::mapped_pages(std::uint32_t ctx) const
{
    if (!valid_ctx(ctx)) return 0;
    std::shared_lock lock(ctx_[ctx].mutex);
    return ctx_[ctx].pages.size();
}

Mmu::View::View(const Mmu& mmu, std::uint32_t ctx)
{
    if (!valid_ctx(ctx)) return;
    lock_ = std::shared_lock(mmu.ctx_[ctx].mutex);
    ctx_ = &mmu.ctx_[ctx].pages;
}

const Mmu::Page* Mmu::View::find(std::uint64_t va) const
{
    if (!ctx_) return nullptr;
    auto it = ctx_->find(va / kPage);
    return it == ctx_->end() ? nullptr : &it->second;
}

bool Mmu::View::mapped(std::uint64_t va, std::uint64_t len) const
{
    if (!ctx_ || len == 0 || va + len < va) return false;
    for (std::uint64_t vpn = va / kPage, last = (va + len - 1) / kPage; vpn <= last; ++vpn)
        if (!ctx_->contains(vpn)) return false;
    return true;
}

std::uint32_t Mmu::translate(std::uint32_t ctx, std::uint64_t va, std::uint64_t len, int from_slice,
                             std::vector<Segment>& out) const
{
    out.clear();
    if (!valid_ctx(ctx)) return JAL_STATUS_INVALID_FIELD;
    if (len == 0) return JAL_STATUS_OK;
    if (va + len < va) return JAL_STATUS_PAGE_FAULT;
    View v(*this, ctx);
    for (std::uint64_t off = 0; off < len;) {
        const std::uint64_t a = va + off;
        const std::uint64_t n = std::min(len - off, kPage - (a & kPageMask));
        const Page* p = v.find(a);
        if (!p) {
            out.clear();
            return JAL_STATUS_PAGE_FAULT;
        }
        const Replica* r = &p->front();
        for (const Replica& x : *p)
            if (from_slice >= 0 && x.slice == static_cast<std::uint32_t>(from_slice)) {
                r = &x;
                break;
            }
        const std::uint64_t pa = r->pa + (a & kPageMask);
        if (!out.empty() && out.back().pa + out.back().len == pa)
            out.back().len += n;
        else
            out.push_back({a, pa, n});
        off += n;
    }
    return JAL_STATUS_OK;
}

}  // namespace jal::emu
