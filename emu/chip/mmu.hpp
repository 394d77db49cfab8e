// The device MMU: per context (1..JAL_MAX_CONTEXTS-1) a map of 2 MiB device virtual pages
// to HBM physical pages. A replicated page has one physical page per replica, each tagged
// with the physical slice that owns it (slice = channel / 3). The firmware programs it
// through the MMU block of jal/hw/mgmt.h (management-core thread); the command processor's
// queue engines translate concurrently (one shared lock per context, taken once per page
// run of a COPY or per tile DMA of a kernel, never per byte).
#pragma once

#include "jal/hw/admin.h"

#include <array>
#include <cstdint>
#include <functional>
#include <shared_mutex>
#include <unordered_map>
#include <vector>

namespace jal::emu {

class Mmu {
public:
    static constexpr std::uint64_t kPage = JAL_PAGE_SIZE;
    static constexpr std::uint32_t kMaxReplicas = 64;

    struct Replica {
        std::uint64_t pa;
        std::uint32_t slice;  // physical slice owning the page
    };
    using Page = std::vector<Replica>;  // replica 0 first, in the order they were added

    // ---- management-core side: the register block (offsets inside JAL_MGMT_MMU) ----
    std::uint32_t fw_read(std::uint32_t off) const;
    void fw_write(std::uint32_t off, std::uint32_t value);

    // ---- the commands behind JAL_MMU_CMD; each returns a jal_status ----
    std::uint32_t map(std::uint32_t ctx, std::uint64_t va, std::uint64_t pa, bool add_replica);
    std::uint32_t unmap(std::uint32_t ctx, std::uint64_t va);
    std::uint32_t lookup(std::uint32_t ctx, std::uint64_t va, std::uint32_t replica,
                         std::uint64_t& pa) const;
    std::uint32_t flush(std::uint32_t ctx);
    // SCRUB: zeroes the physical page at pa through on_scrub (INVALID_FIELD for an address
    // that is not a page of HBM, UNSUPPORTED without a scrubber).
    std::uint32_t scrub(std::uint64_t pa);
    // Zeroes one HBM page and charges its write to the management core (set by the chip).
    std::function<void(std::uint64_t pa)> on_scrub;
    // Chip reset: every context empty, registers cleared.
    void reset();

    // ---- translation (queue engines) ----
    // A read view of one context: holds its shared lock until destroyed. Keep it for one
    // page run (a memcpy of at most a page) or one tile DMA (at most a slice's L1), so
    // MAP/UNMAP wait for accesses in flight.
    class View {
    public:
        View(const Mmu& mmu, std::uint32_t ctx);
        bool valid() const { return ctx_ != nullptr; }
        // The replicas of the page holding va, or nullptr if unmapped.
        const Page* find(std::uint64_t va) const;
        // [va, va+len) is mapped throughout.
        bool mapped(std::uint64_t va, std::uint64_t len) const;

    private:
        std::shared_lock<std::shared_mutex> lock_;
        const std::unordered_map<std::uint64_t, Page>* ctx_ = nullptr;
    };

    struct Segment {
        std::uint64_t va, pa, len;
    };
    // Translates [va, va+len) as seen from physical slice `from_slice` (its own replica, else
    // replica 0; -1 = not a slice: replica 0) into physical runs split at page boundaries.
    // JAL_STATUS_PAGE_FAULT if any byte is unmapped, INVALID_FIELD for a bad context.
    std::uint32_t translate(std::uint32_t ctx, std::uint64_t va, std::uint64_t len, int from_slice,
                            std::vector<Segment>& out) const;

    std::size_t mapped_pages(std::uint32_t ctx) const;
    static bool valid_ctx(std::uint32_t ctx) { return ctx >= 1 && ctx < JAL_MAX_CONTEXTS; }

private:
    struct Context {
        mutable std::shared_mutex mutex;
        std::unordered_map<std::uint64_t, Page> pages;  // by virtual page number
    };
    std::array<Context, JAL_MAX_CONTEXTS> ctx_;

    // Register block (management-core thread only).
    std::uint32_t r_ctx_ = 0, r_flags_ = 0, r_status_ = 0;
    std::uint64_t r_va_ = 0, r_pa_ = 0;
};

}  // namespace jal::emu
