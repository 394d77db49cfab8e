// The device MMU: per context (1..JAL_MAX_CONTEXTS-1) a map of 2 MiB device virtual pages
// to HBM physical pages. A replicated page has one physical page per replica, each tagged
// with the physical slice that owns it (slice = channel / 3). The firmware programs it
// through the MMU block of jal/hw/mgmt.h (management-core thread); the command processor's
// queue engines translate concurrently (one shared lock per context, taken once per page
// run of a COPY or per tile DMA of a kernel, never per byte).
#pragma once

#include "emu/util/reader_biased_mutex.hpp"
#include "jal/hw/admin.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <random>
#include <shared_mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace jal::emu {

class Mmu {
public:
    static constexpr std::uint64_t kPage = JAL_PAGE_SIZE;
    static constexpr std::uint32_t kMaxReplicas = 64;

    static constexpr std::uint32_t kPeerSlice = ~0u;  // the slice of a remote page: none

    struct Replica {
        std::uint64_t pa;
        std::uint32_t slice;  // physical slice owning the page (kPeerSlice: another chip's)
        // A remote page (MAP_REMOTE): pa is chip `chip`'s, granted by its export `slot`
        // under `key`. Local pages have chip -1.
        std::int32_t chip = -1;
        std::uint32_t slot = 0;
        std::uint64_t key = 0;
        bool remote() const { return chip >= 0; }
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

    // ---- peer memory (interface 1.8; docs/fabric.md, "Peer memory") ----
    // EXPORT: publishes `pages` pages of ctx from va in export slot `slot` of the table in
    // this chip's HBM, under a fresh random key. REVOKE clears the slot.
    std::uint32_t export_pages(std::uint32_t ctx, std::uint64_t va, std::uint32_t pages,
                               std::uint32_t slot, std::uint64_t& key);
    std::uint32_t revoke(std::uint32_t slot);
    // MAP_REMOTE: va of ctx -> page `page` of export `slot` of chip `chip`, read from the
    // peer's table and checked against `key`.
    std::uint32_t map_remote(std::uint32_t ctx, std::uint64_t va, std::uint32_t chip,
                             std::uint32_t slot, std::uint32_t page, std::uint64_t key);
    // The chip's fabric ports, set by the chip before it runs. read/write move bytes to or
    // from a peer chip's physical address and return a jal_status (LINK_DOWN when the peer
    // cannot be reached), adding the link's modelled time to link_ns; table_write writes
    // this chip's HBM (the export table).
    struct Fabric {
        std::function<std::uint32_t()> self;  // this chip's domain-wide id, ~0u: no domain
        std::function<std::uint32_t(std::uint32_t chip, std::uint64_t pa, std::span<std::byte>,
                                    std::uint64_t& link_ns)>
            read;
        std::function<std::uint32_t(std::uint32_t chip, std::uint64_t pa,
                                    std::span<const std::byte>, std::uint64_t& link_ns)>
            write;
        std::function<void(std::uint64_t pa, std::span<const std::byte>)> table_write;
    };
    Fabric fabric;
    // An access to a remote page: the export's key is read from the peer first (a revoked
    // export fails PERMISSION), then `off` bytes into the page are read or written.
    // link_ns (if given) receives the links' modelled time of the data transfer.
    std::uint32_t peer_read(const Replica& r, std::uint64_t off, std::span<std::byte> out,
                            std::uint64_t* link_ns = nullptr) const;
    std::uint32_t peer_write(const Replica& r, std::uint64_t off, std::span<const std::byte> in,
                             std::uint64_t* link_ns = nullptr) const;
    // Totals of the remote accesses (bytes of data, the links' modelled ns for them).
    struct PeerStats {
        std::uint64_t accesses = 0, bytes = 0, link_ns = 0, failures = 0;
    };
    PeerStats peer_stats() const;

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
        std::shared_lock<ReaderBiasedMutex<>> lock_;
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
        mutable ReaderBiasedMutex<> mutex;  // read at every access, written by MAP/UNMAP
        std::unordered_map<std::uint64_t, Page> pages;  // by virtual page number
    };
    std::array<Context, JAL_MAX_CONTEXTS> ctx_;

    std::uint32_t check_key(const Replica& r) const;
    void peer_done(std::uint32_t status, std::uint64_t bytes, std::uint64_t ns) const;
    void fw_command(std::uint32_t cmd);

    // Register block (management-core thread only).
    std::uint32_t r_ctx_ = 0, r_flags_ = 0, r_status_ = 0, r_chip_ = 0, r_slot_ = 0;
    std::uint64_t r_va_ = 0, r_pa_ = 0, r_key_ = 0;
    std::mt19937_64 keys_{std::random_device{}()};  // EXPORT's keys: not guessable by tenants

    mutable std::atomic<std::uint64_t> peer_accesses_{0}, peer_bytes_{0}, peer_ns_{0},
        peer_failures_{0};
};

}  // namespace jal::emu
