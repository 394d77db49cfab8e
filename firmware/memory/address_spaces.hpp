// Contexts and their device memory: context ids 1..JAL_MAX_CONTEXTS-1, each owned by one
// host function with its own device virtual address space, and a chip-wide table of up to
// JAL_MAX_ALLOCATIONS allocations. Pages come from the PageAllocator and are mapped in the
// MMU; the MMU is the record of which physical page backs each virtual page (LOOKUP), so an
// allocation costs 8 bytes of SRAM whatever its size.
//
// Virtual addresses: a bump allocator per context from JAL_VA_BASE, aligned as asked, with
// one unmapped guard page after every allocation (an overrun faults instead of landing in
// the neighbour). Addresses are never reused within a context's lifetime; 2^32 pages of
// address space make that a non-issue.
//
// Placement (logical slices, ascending order of the mask):
//   SLICE        every page on the one slice;
//   INTERLEAVED  page i on the (i mod n)-th slice;
//   REPLICATED   replica r of every page on the r-th slice (r = 0 mapped first, then
//                JAL_MMU_F_ADD_REPLICA for the others).
// Every slice must have all the pages it is asked for before anything is taken, so a
// failed allocation leaves nothing behind.
#pragma once

#include <array>
#include <cstdint>

#include "firmware/host/journal.hpp"
#include "firmware/memory/exports.hpp"
#include "firmware/memory/page_allocator.hpp"
#include "jal/hw/admin.h"

namespace jal::fw::memory {

inline constexpr std::uint8_t kNoFunction = 0xff;
inline constexpr std::uint32_t kAlignMinLog2 = 21;  // JAL_PAGE_SIZE
inline constexpr std::uint32_t kAlignMaxLog2 = 40;

struct AllocRequest {
    std::uint64_t bytes = 0;
    std::uint32_t placement = 0;   // enum jal_placement
    std::uint64_t slice_mask = 0;  // logical slices
    std::uint32_t align_log2 = 0;  // 0: a page
    // Physical pages (every replica) the owner may still take; more is NO_MEMORY.
    std::uint64_t page_budget = ~std::uint64_t{0};
};

// One live allocation (8 bytes). ctx == 0 marks a free slot; replicas == 0 marks pages of a
// peer chip (IMPORT_PEER): mapped here, owned and scrubbed there.
struct Allocation {
    std::uint32_t va_page = 0;        // (va - JAL_VA_BASE) / JAL_PAGE_SIZE
    std::uint32_t pages : 17 = 0;     // virtual pages; at most kTotalPages
    std::uint32_t replicas : 7 = 0;   // 1..JAL_NUM_SLICES
    std::uint32_t placement : 2 = 0;  // enum jal_placement
    std::uint32_t ctx : 6 = 0;

    std::uint64_t va() const { return JAL_VA_BASE + std::uint64_t{va_page} * JAL_PAGE_SIZE; }
};
static_assert(sizeof(Allocation) == 8);
static_assert(kTotalPages < (1u << 17) && JAL_NUM_SLICES < (1u << 7) &&
              JAL_MAX_CONTEXTS <= (1u << 6));

class AddressSpaces {
public:
    explicit AddressSpaces(host::Journal& journal) : journal_(journal) {}

    // Forgets every context and allocation, makes the pages of enabled slices' in-service
    // channels free, and flushes every context id from the MMU (a management-core reset
    // may leave the MMU holding a previous boot's mappings).
    void init(std::uint64_t enabled_slices, const hbm::HbmState& hbm);

    // A new context owned by fn; JAL_STATUS_BUSY when every id is taken.
    [[nodiscard]] std::uint32_t create_context(std::uint32_t fn, std::uint32_t& ctx);
    // JAL_STATUS_INVALID_FIELD for an id that is not a live context, PERMISSION when
    // another function owns it.
    [[nodiscard]] std::uint32_t check_owner(std::uint32_t fn, std::uint32_t ctx) const;
    // Frees every allocation of the context (unmap, free pages), flushes it from the MMU
    // and releases the id. Returns the number of allocations it still held.
    std::uint32_t destroy_context(std::uint32_t ctx);
    std::uint8_t owner(std::uint32_t ctx) const
    {
        return ctx > 0 && ctx < JAL_MAX_CONTEXTS ? contexts_[ctx].owner : kNoFunction;
    }

    // Allocates and maps; fills the reply. INVALID_FIELD, NO_MEMORY, or INTERNAL when the
    // MMU refused a mapping (logged; nothing is left mapped or taken).
    [[nodiscard]] std::uint32_t alloc(std::uint32_t ctx, const AllocRequest& req,
                                      jal_mem_alloc_reply& reply);
    // va must be the start of one of the context's allocations (else INVALID_FIELD).
    [[nodiscard]] std::uint32_t free(std::uint32_t ctx, std::uint64_t va);
    // Peer memory (interface 1.8). EXPORT_MEMORY: pages [va, va+bytes) of one of ctx's own
    // allocations (page-aligned start; bytes rounded up to pages) published for peers.
    [[nodiscard]] std::uint32_t export_memory(std::uint32_t ctx, std::uint64_t va,
                                              std::uint64_t bytes, jal_mem_export_reply& out);
    // IMPORT_PEER: `pages` pages of export `handle` of chip `chip` mapped at a fresh address
    // of ctx (with a guard page after it, like an allocation); FREE_MEMORY unmaps them.
    [[nodiscard]] std::uint32_t import_peer(std::uint32_t ctx, std::uint32_t chip,
                                            std::uint32_t handle, std::uint64_t key,
                                            std::uint32_t pages, jal_mem_alloc_reply& reply);
    // Takes back export `handle` of ctx (its reply never reached the host).
    void unexport(std::uint32_t ctx, std::uint32_t handle) { exports_.drop(ctx, handle); }
    const Exports& exports() const { return exports_; }

    // The allocation of the context containing va, or nullptr.
    const Allocation* find(std::uint32_t ctx, std::uint64_t va) const;
    // Where replica `replica` of page `page` of the allocation lives (MMU LOOKUP).
    [[nodiscard]] std::uint32_t placement(const Allocation& a, std::uint32_t page,
                                          std::uint32_t replica, jal_page_placement& out) const;

    std::uint32_t live_contexts() const;
    // Physical pages (every replica) held by the contexts of host function fn.
    std::uint64_t pages_of(std::uint32_t fn) const;
    std::uint32_t live_allocations() const { return live_allocations_; }
    std::uint32_t allocations_of(std::uint32_t ctx) const
    {
        return ctx > 0 && ctx < JAL_MAX_CONTEXTS ? contexts_[ctx].allocations : 0;
    }
    // Physical pages host function fn holds on physical slice `slice` (GET_USAGE).
    std::uint32_t slice_pages_of(std::uint32_t fn, std::uint32_t slice) const
    {
        return fn < kFunctions && slice < JAL_NUM_SLICES ? fn_slice_pages_[fn][slice] : 0;
    }
    const PageAllocator& pages() const { return pages_; }
    // Pages and channels that left service (PageAllocator::retire, retire_channel).
    bool retire_page(std::uint64_t phys) { return pages_.retire(phys); }
    bool retire_channel(std::uint32_t channel) { return pages_.retire_channel(channel); }
    std::uint64_t enabled_slices() const { return enabled_; }
    std::uint32_t logical_slices() const;

private:
    struct Context {
        std::uint8_t owner = kNoFunction;  // host function; kNoFunction = id free
        std::uint16_t allocations = 0;
        std::uint32_t next_va_page = 0;
    };

    // Unmaps pages [0, count) of a mapping at va_page and frees every replica the MMU
    // reports for them. Returns the physical pages freed.
    std::uint32_t release(std::uint32_t ctx, std::uint32_t va_page, std::uint32_t count,
                          std::uint32_t replicas);
    void mmu_error(std::uint32_t cmd, std::uint32_t status, std::uint32_t ctx,
                   std::uint32_t va_page);
    // alloc()'s steps: the request's fields (INVALID_FIELD, or NO_MEMORY for more pages
    // than the chip has), and mapping `pages` pages × `replicas` at va_page on the slices
    // `phys` (the mask's slices in logical order); on an MMU refusal nothing stays mapped.
    std::uint32_t check_request(std::uint32_t ctx, const AllocRequest& req) const;
    std::uint32_t map_pages(std::uint32_t ctx, const AllocRequest& req, const std::uint8_t* phys,
                            std::uint32_t va_page, std::uint32_t pages, std::uint32_t replicas);

    static constexpr std::uint32_t kFunctions = 8;  // JAL_MGMT_MAX_FUNCS
    // Pages of ctx's owner on the slice of pa change by `delta` (kept as pages are mapped
    // and released, so usage per function and slice costs no MMU walk).
    void account(std::uint32_t ctx, std::uint64_t pa, int delta);

    // A free allocation slot, or nullptr.
    Allocation* free_slot();

    host::Journal& journal_;
    PageAllocator pages_;
    Exports exports_;
    // 1 KiB: at most kPagesPerSlice (1,728) pages of a slice, so 16 bits each.
    std::array<std::array<std::uint16_t, JAL_NUM_SLICES>, kFunctions> fn_slice_pages_{};
    std::uint64_t enabled_ = 0;
    std::array<Context, JAL_MAX_CONTEXTS> contexts_{};  // [0] unused
    std::array<Allocation, JAL_MAX_ALLOCATIONS> allocs_{};
    std::uint32_t live_allocations_ = 0;
    std::uint32_t next_ctx_ = 1;  // ids rotate, so a stale id is not reused at once
};

}  // namespace jal::fw::memory
