#include "firmware/memory/address_spaces.hpp"

#include <array>
#include <bit>

#include "firmware/hal/hal.hpp"
#include "firmware/host/admin_progress.hpp"
#include "firmware/host/event_codes.hpp"
#include "firmware/memory/mmu.hpp"
#include "firmware/sys/watchdog.hpp"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

namespace jal::fw::memory {

namespace {
// Mapping or unmapping most of HBM is tens of thousands of MMU commands, far longer than the
// watchdog's 50 ms. The loops make progress page by page, so they feed it every this many
// physical pages, every replica counted (at most 2.4 ms of work: a free scrubs each page,
// 9.2 µs), as the long boot steps do: a hang inside one page still trips it. Counting
// virtual pages was not enough: 86 pages replicated over 64 slices are 5,504 scrubs. The
// host is told at the same beat, so its admin timeout counts only time without progress.
constexpr std::uint32_t kPagesPerFeed = 256;

class Progress {
public:
    void pages(std::uint32_t n)
    {
        done_ += n;
        if (done_ < kPagesPerFeed) return;
        sys::watchdog_feed();
        host::report_admin_progress();
        done_ = 0;
    }

private:
    std::uint32_t done_ = 0;
};

std::uint64_t va_of(std::uint32_t va_page)
{
    return JAL_VA_BASE + std::uint64_t{va_page} * JAL_PAGE_SIZE;
}

std::uint32_t logical_of_physical(std::uint64_t enabled, std::uint32_t phys)
{
    return static_cast<std::uint32_t>(std::popcount(enabled & ((std::uint64_t{1} << phys) - 1)));
}

}  // namespace

void AddressSpaces::init(std::uint64_t enabled_slices, const hbm::HbmState& hbm)
{
    enabled_ = enabled_slices;
    pages_.init(enabled_slices, hbm);
    // Only a chip cabled to others can be read by them: single chips keep every page.
    if (hal::read32(JAL_LINK_CONNECTED_MASK) != 0) (void)pages_.reserve_export_table();
    contexts_.fill(Context{});
    allocs_.fill(Allocation{});
    fn_slice_pages_ = {};
    live_allocations_ = 0;
    next_ctx_ = 1;
    for (std::uint32_t ctx = 1; ctx < JAL_MAX_CONTEXTS; ++ctx) (void)mmu::flush_ctx(ctx);
    if (pages_.export_table_reserved()) exports_.init();
}

std::uint32_t AddressSpaces::logical_slices() const
{
    return static_cast<std::uint32_t>(std::popcount(enabled_));
}

std::uint32_t AddressSpaces::live_contexts() const
{
    std::uint32_t n = 0;
    for (std::uint32_t ctx = 1; ctx < JAL_MAX_CONTEXTS; ++ctx)
        n += contexts_[ctx].owner != kNoFunction;
    return n;
}

std::uint32_t AddressSpaces::create_context(std::uint32_t fn, std::uint32_t& ctx)
{
    for (std::uint32_t i = 0; i < JAL_MAX_CONTEXTS - 1; ++i) {
        const std::uint32_t id = 1 + (next_ctx_ - 1 + i) % (JAL_MAX_CONTEXTS - 1);
        if (contexts_[id].owner != kNoFunction) continue;
        // The id may still hold mappings if a previous owner's teardown was cut short.
        const std::uint32_t status = mmu::flush_ctx(id);
        if (status != JAL_STATUS_OK) {
            mmu_error(JAL_MMU_CMD_FLUSH_CTX, status, id, 0);
            return JAL_STATUS_INTERNAL;
        }
        contexts_[id] = Context{static_cast<std::uint8_t>(fn), 0, 0};
        next_ctx_ = id % (JAL_MAX_CONTEXTS - 1) + 1;
        ctx = id;
        return JAL_STATUS_OK;
    }
    return JAL_STATUS_BUSY;
}

std::uint32_t AddressSpaces::check_owner(std::uint32_t fn, std::uint32_t ctx) const
{
    if (ctx == 0 || ctx >= JAL_MAX_CONTEXTS || contexts_[ctx].owner == kNoFunction)
        return JAL_STATUS_INVALID_FIELD;
    return contexts_[ctx].owner == fn ? JAL_STATUS_OK : JAL_STATUS_PERMISSION;
}

std::uint32_t AddressSpaces::destroy_context(std::uint32_t ctx)
{
    if (ctx == 0 || ctx >= JAL_MAX_CONTEXTS || contexts_[ctx].owner == kNoFunction) return 0;
    std::uint32_t held = 0;
    (void)exports_.revoke(ctx, 0, ~0u);  // before any page can be scrubbed and handed on
    for (Allocation& a : allocs_) {
        if (a.ctx != ctx) continue;
        (void)release(ctx, a.va_page, a.pages, a.replicas);
        a = Allocation{};
        --live_allocations_;
        ++held;
    }
    const std::uint32_t status = mmu::flush_ctx(ctx);
    if (status != JAL_STATUS_OK) mmu_error(JAL_MMU_CMD_FLUSH_CTX, status, ctx, 0);
    contexts_[ctx] = Context{};
    return held;
}

std::uint32_t AddressSpaces::check_request(std::uint32_t ctx, const AllocRequest& req) const
{
    if (ctx == 0 || ctx >= JAL_MAX_CONTEXTS || contexts_[ctx].owner == kNoFunction)
        return JAL_STATUS_INVALID_FIELD;
    const std::uint32_t logical = logical_slices();
    const std::uint32_t n = static_cast<std::uint32_t>(std::popcount(req.slice_mask));
    if (req.placement < JAL_PLACE_SLICE || req.placement > JAL_PLACE_REPLICATED)
        return JAL_STATUS_INVALID_FIELD;
    if (n == 0 || (logical < 64 && (req.slice_mask >> logical) != 0))
        return JAL_STATUS_INVALID_FIELD;
    if (req.placement == JAL_PLACE_SLICE && n != 1) return JAL_STATUS_INVALID_FIELD;
    const std::uint32_t align = req.align_log2 == 0 ? kAlignMinLog2 : req.align_log2;
    if (align < kAlignMinLog2 || align > kAlignMaxLog2) return JAL_STATUS_INVALID_FIELD;
    if (req.bytes == 0) return JAL_STATUS_INVALID_FIELD;
    const std::uint64_t pages = req.bytes / JAL_PAGE_SIZE + (req.bytes % JAL_PAGE_SIZE != 0);
    if (pages > kTotalPages) return JAL_STATUS_NO_MEMORY;
    return JAL_STATUS_OK;
}

std::uint32_t AddressSpaces::map_pages(std::uint32_t ctx, const AllocRequest& req,
                                       const std::uint8_t* phys, std::uint32_t va_page,
                                       std::uint32_t pages, std::uint32_t replicas)
{
    const auto n = static_cast<std::uint32_t>(std::popcount(req.slice_mask));
    Progress progress;
    for (std::uint32_t i = 0; i < pages; ++i) {
        progress.pages(replicas);
        for (std::uint32_t r = 0; r < replicas; ++r) {
            const std::uint32_t slice = req.placement == JAL_PLACE_REPLICATED    ? phys[r]
                                        : req.placement == JAL_PLACE_INTERLEAVED ? phys[i % n]
                                                                                 : phys[0];
            const std::uint32_t page = pages_.take(slice);
            std::uint32_t status = JAL_STATUS_INTERNAL;
            std::uint64_t pa = 0;
            if (page != kNoPage) {
                pa = page_phys(slice, page);
                status = mmu::map(ctx, va_of(va_page + i), pa, r > 0);
                if (status == JAL_STATUS_OK) account(ctx, pa, +1);
            }
            if (status != JAL_STATUS_OK) {
                mmu_error(JAL_MMU_CMD_MAP, status, ctx, va_page + i);
                if (page != kNoPage) (void)pages_.release(pa);
                (void)release(ctx, va_page, i + 1, replicas);
                return JAL_STATUS_INTERNAL;
            }
        }
    }
    return JAL_STATUS_OK;
}

std::uint32_t AddressSpaces::alloc(std::uint32_t ctx, const AllocRequest& req,
                                   jal_mem_alloc_reply& reply)
{
    if (const std::uint32_t st = check_request(ctx, req); st != JAL_STATUS_OK) return st;
    const auto n = static_cast<std::uint32_t>(std::popcount(req.slice_mask));
    const std::uint32_t align = req.align_log2 == 0 ? kAlignMinLog2 : req.align_log2;
    const auto pages =
        static_cast<std::uint32_t>(req.bytes / JAL_PAGE_SIZE + (req.bytes % JAL_PAGE_SIZE != 0));
    const std::uint32_t replicas = req.placement == JAL_PLACE_REPLICATED ? n : 1;
    if (std::uint64_t{pages} * replicas > req.page_budget) return JAL_STATUS_NO_MEMORY;

    // The mask's slices in ascending logical order, as physical ids.
    std::array<std::uint8_t, JAL_NUM_SLICES> phys{};
    {
        std::uint32_t k = 0, l = 0;
        for (std::uint32_t s = 0; s < JAL_NUM_SLICES; ++s) {
            if (!((enabled_ >> s) & 1)) continue;
            if ((req.slice_mask >> l) & 1) phys[k++] = static_cast<std::uint8_t>(s);
            ++l;
        }
    }
    // Every slice must hold its share before anything is taken.
    for (std::uint32_t k = 0; k < n; ++k) {
        std::uint32_t need = pages;
        if (req.placement == JAL_PLACE_INTERLEAVED) need = pages / n + (k < pages % n ? 1u : 0u);
        if (pages_.free_pages(phys[k]) < need) return JAL_STATUS_NO_MEMORY;
    }
    Allocation* slot = free_slot();
    if (slot == nullptr) return JAL_STATUS_NO_MEMORY;

    Context& c = contexts_[ctx];
    const std::uint64_t align_pages = std::uint64_t{1} << (align - kAlignMinLog2);
    const std::uint64_t start =
        (std::uint64_t{c.next_va_page} + align_pages - 1) & ~(align_pages - 1);
    if (start + pages + 1 > 0xffffffffull) return JAL_STATUS_NO_MEMORY;  // virtual space used up
    const auto va_page = static_cast<std::uint32_t>(start);
    if (const std::uint32_t st = map_pages(ctx, req, phys.data(), va_page, pages, replicas);
        st != JAL_STATUS_OK)
        return st;

    slot->va_page = va_page;
    slot->pages = pages & 0x1ffff;
    slot->replicas = replicas & 0x7f;
    slot->placement = req.placement & 0x3;
    slot->ctx = ctx & 0x3f;
    ++live_allocations_;
    ++c.allocations;
    c.next_va_page = va_page + pages + 1;  // one guard page

    reply = jal_mem_alloc_reply{};
    reply.va = va_of(va_page);
    reply.size = std::uint64_t{pages} * JAL_PAGE_SIZE;
    reply.slice_mask = req.slice_mask;
    reply.placement = req.placement;
    reply.page_size = JAL_PAGE_SIZE;
    reply.pages = pages;
    reply.replicas = replicas;
    return JAL_STATUS_OK;
}

std::uint32_t AddressSpaces::free(std::uint32_t ctx, std::uint64_t va)
{
    if (ctx == 0 || ctx >= JAL_MAX_CONTEXTS || contexts_[ctx].owner == kNoFunction)
        return JAL_STATUS_INVALID_FIELD;
    if (va < JAL_VA_BASE || (va - JAL_VA_BASE) % JAL_PAGE_SIZE) return JAL_STATUS_INVALID_FIELD;
    const std::uint64_t vp = (va - JAL_VA_BASE) / JAL_PAGE_SIZE;
    for (Allocation& a : allocs_) {
        if (a.ctx != ctx || a.va_page != vp) continue;
        (void)exports_.revoke(ctx, a.va_page, a.pages);
        (void)release(ctx, a.va_page, a.pages, a.replicas);
        a = Allocation{};
        --live_allocations_;
        --contexts_[ctx].allocations;
        return JAL_STATUS_OK;
    }
    return JAL_STATUS_INVALID_FIELD;
}

Allocation* AddressSpaces::free_slot()
{
    for (Allocation& a : allocs_)
        if (a.ctx == 0) return &a;
    return nullptr;
}

std::uint32_t AddressSpaces::export_memory(std::uint32_t ctx, std::uint64_t va, std::uint64_t bytes,
                                           jal_mem_export_reply& out)
{
    if (ctx == 0 || ctx >= JAL_MAX_CONTEXTS || contexts_[ctx].owner == kNoFunction)
        return JAL_STATUS_INVALID_FIELD;
    if (!pages_.export_table_reserved()) return JAL_STATUS_UNSUPPORTED;  // no fabric ports
    if (bytes == 0) return JAL_STATUS_INVALID_LENGTH;
    if (va < JAL_VA_BASE || (va - JAL_VA_BASE) % JAL_PAGE_SIZE) return JAL_STATUS_INVALID_FIELD;
    const Allocation* a = find(ctx, va);
    if (a == nullptr) return JAL_STATUS_PAGE_FAULT;
    // Replicated pages would need every copy written by the peer; a peer's pages are not
    // this context's to give.
    if (a->replicas != 1) return JAL_STATUS_INVALID_FIELD;
    const auto first = static_cast<std::uint32_t>((va - JAL_VA_BASE) / JAL_PAGE_SIZE);
    const std::uint64_t pages = bytes / JAL_PAGE_SIZE + (bytes % JAL_PAGE_SIZE != 0);
    if (first + pages > std::uint64_t{a->va_page} + a->pages) return JAL_STATUS_OUT_OF_RANGE;
    if (pages > JAL_EXPORT_MAX_PAGES) return JAL_STATUS_INVALID_LENGTH;
    return exports_.add(ctx, first, static_cast<std::uint32_t>(pages), out);
}

std::uint32_t AddressSpaces::import_peer(std::uint32_t ctx, std::uint32_t chip,
                                         std::uint32_t handle, std::uint64_t key,
                                         std::uint32_t pages, jal_mem_alloc_reply& reply)
{
    if (ctx == 0 || ctx >= JAL_MAX_CONTEXTS || contexts_[ctx].owner == kNoFunction)
        return JAL_STATUS_INVALID_FIELD;
    if (pages == 0 || pages > JAL_EXPORT_MAX_PAGES) return JAL_STATUS_INVALID_LENGTH;
    if (handle >= JAL_MAX_EXPORTS) return JAL_STATUS_INVALID_FIELD;
    Allocation* slot = free_slot();
    if (slot == nullptr) return JAL_STATUS_NO_MEMORY;
    Context& c = contexts_[ctx];
    if (std::uint64_t{c.next_va_page} + pages + 1 > 0xffffffffull) return JAL_STATUS_NO_MEMORY;
    const std::uint32_t va_page = c.next_va_page;
    Progress progress;
    for (std::uint32_t i = 0; i < pages; ++i) {
        progress.pages(1);
        const std::uint32_t status = mmu::map_remote(ctx, va_of(va_page + i), chip, handle, i, key);
        if (status != JAL_STATUS_OK) {
            for (std::uint32_t k = 0; k < i; ++k) (void)mmu::unmap(ctx, va_of(va_page + k));
            return status;  // the peer's refusal (PERMISSION) or its link's (LINK_DOWN)
        }
    }
    slot->va_page = va_page;
    slot->pages = pages & 0x1ffff;
    slot->replicas = 0;  // a peer's pages
    slot->placement = 0;
    slot->ctx = ctx & 0x3f;
    ++live_allocations_;
    ++c.allocations;
    c.next_va_page = va_page + pages + 1;  // one guard page

    reply = jal_mem_alloc_reply{};
    reply.va = va_of(va_page);
    reply.size = std::uint64_t{pages} * JAL_PAGE_SIZE;
    reply.placement = JAL_PLACE_PEER;
    reply.page_size = JAL_PAGE_SIZE;
    reply.pages = pages;
    reply.replicas = 0;
    return JAL_STATUS_OK;
}

const Allocation* AddressSpaces::find(std::uint32_t ctx, std::uint64_t va) const
{
    if (ctx == 0 || ctx >= JAL_MAX_CONTEXTS || va < JAL_VA_BASE) return nullptr;
    const std::uint64_t vp = (va - JAL_VA_BASE) / JAL_PAGE_SIZE;
    for (const Allocation& a : allocs_)
        if (a.ctx == ctx && vp >= a.va_page && vp < std::uint64_t{a.va_page} + a.pages) return &a;
    return nullptr;
}

std::uint32_t AddressSpaces::placement(const Allocation& a, std::uint32_t page,
                                       std::uint32_t replica, jal_page_placement& out) const
{
    std::uint64_t pa = 0;
    const std::uint32_t status = mmu::lookup(a.ctx, va_of(a.va_page + page), replica, pa);
    if (status != JAL_STATUS_OK) return status;
    const std::uint32_t channel = jal_hbm_channel_of(pa);
    out = jal_page_placement{};
    out.phys = pa;
    out.slice =
        static_cast<std::uint8_t>(logical_of_physical(enabled_, jal_slice_of_channel(channel)));
    out.replica = static_cast<std::uint8_t>(replica);
    out.channel_lo = static_cast<std::uint8_t>(channel);
    return JAL_STATUS_OK;
}

std::uint32_t AddressSpaces::release(std::uint32_t ctx, std::uint32_t va_page, std::uint32_t count,
                                     std::uint32_t replicas)
{
    std::uint32_t freed = 0, strays = 0, scrub_failures = 0;
    std::array<std::uint64_t, JAL_NUM_SLICES> phys{};
    Progress progress;
    for (std::uint32_t i = 0; i < count; ++i) {
        progress.pages(replicas);
        const std::uint64_t va = va_of(va_page + i);
        std::uint32_t n = 0;
        for (std::uint32_t r = 0; r < replicas && r < phys.size(); ++r)
            if (mmu::lookup(ctx, va, r, phys[n]) == JAL_STATUS_OK) ++n;  // else never mapped
        // Unmapped before the scrub, so no access of the context can land after it; scrubbed
        // before the page is free, so the next tenant never sees this one's data.
        (void)mmu::unmap(ctx, va);
        for (std::uint32_t k = 0; k < n; ++k) {
            account(ctx, phys[k], -1);
            if (mmu::scrub(phys[k]) != JAL_STATUS_OK) {
                ++scrub_failures;  // kept out of service rather than handed on unscrubbed
                continue;
            }
            if (pages_.release(phys[k]))
                ++freed;
            else
                ++strays;
        }
    }
    if (strays)
        journal_.event(JAL_SRC_ADMIN, JAL_SEV_ERROR, host::kEvMmuError, "mmu: stray page on free",
                       {JAL_MMU_CMD_LOOKUP, strays, ctx, va_page});
    if (scrub_failures)
        journal_.event(JAL_SRC_ADMIN, JAL_SEV_ERROR, host::kEvMmuError, "mmu: scrub failed",
                       {JAL_MMU_CMD_SCRUB, scrub_failures, ctx, va_page});
    return freed;
}

std::uint64_t AddressSpaces::pages_of(std::uint32_t fn) const
{
    std::uint64_t n = 0;
    for (const Allocation& a : allocs_)
        if (a.ctx != 0 && contexts_[a.ctx].owner == fn) n += std::uint64_t{a.pages} * a.replicas;
    return n;
}

void AddressSpaces::account(std::uint32_t ctx, std::uint64_t pa, int delta)
{
    static_assert(kFunctions == JAL_MGMT_MAX_FUNCS);
    const std::uint32_t fn = owner(ctx);
    const std::uint32_t slice = jal_slice_of_channel(jal_hbm_channel_of(pa));
    if (fn >= kFunctions || slice >= JAL_NUM_SLICES) return;
    std::uint16_t& n = fn_slice_pages_[fn][slice];
    if (delta > 0)
        ++n;
    else if (n > 0)
        --n;
}

void AddressSpaces::mmu_error(std::uint32_t cmd, std::uint32_t status, std::uint32_t ctx,
                              std::uint32_t va_page)
{
    journal_.event(JAL_SRC_ADMIN, JAL_SEV_ERROR, host::kEvMmuError, "mmu command failed",
                   {cmd, status, ctx, va_page});
}

}  // namespace jal::fw::memory
