// Device memory as a dispatch sees it: the queue's context's virtual addresses, translated
// through the MMU exactly as the command processor's COPY does (reads from the replica
// nearest the reading slice, writes to every replica), with the physical slice that owns
// each byte reported for the timing model.
#pragma once

#include "emu/chip/mmu.hpp"

#include <cstdint>

namespace jal::emu {
class HbmMemory;
}  // namespace jal::emu

namespace jal::emu::exec {

// Bytes moved, split by where they live relative to the accessing slice: its own HBM,
// another slice's, or another chip's (a peer page, over the fabric ports: `peer_ns` is the
// links' modelled time for those bytes, the charge of the link model).
struct Traffic {
    std::uint64_t local = 0, remote = 0, peer = 0, peer_ns = 0;
    Traffic& operator+=(const Traffic& o)
    {
        local += o.local;
        remote += o.remote;
        peer += o.peer;
        peer_ns += o.peer_ns;
        return *this;
    }
};

class DeviceMemory {
public:
    class Access;

    DeviceMemory(HbmMemory& hbm, const Mmu& mmu, std::uint32_t ctx);

    // [va, va+len) is mapped throughout (else the caller reports PAGE_FAULT at va).
    bool mapped(std::uint64_t va, std::uint64_t len) const;
    // Copies device bytes to `dst` (dst null: only accounts traffic). Returns a jal_status;
    // PAGE_FAULT leaves `fault_va` at the first unmapped page, ECC_UNCORRECTED (only when `dst`
    // is not null) at the first byte of a run from a poisoned page, LINK_DOWN or PERMISSION
    // (a peer's page that cannot be reached, or whose export was revoked) at its run.
    std::uint32_t read(std::uint64_t va, void* dst, std::uint64_t len, std::uint32_t slice,
                       Traffic& t, std::uint64_t& fault_va) const;
    // Writes to every replica (src null: only accounts traffic). Check mapped() first:
    // a fault half way leaves the earlier pages written.
    std::uint32_t write(std::uint64_t va, const void* src, std::uint64_t len, std::uint32_t slice,
                        Traffic& t, std::uint64_t& fault_va);

    std::uint32_t ctx() const { return ctx_; }

private:
    friend class Access;
    const HbmMemory& mem_;
    std::byte* hbm_;
    const Mmu& mmu_;
    std::uint32_t ctx_;
};

// One operation's accesses (a tile DMA: all its rows, or one scalar load or store): the
// context's page table is held, through one shared lock, from construction to destruction,
// instead of being locked again for every row and page. What that keeps: an UNMAP (and the
// SCRUB the firmware issues after it) waits until the operation is done, so no byte of a
// page is read or written after the page is unmapped; and a TSTORE's check that every row
// is mapped and its writes see the same page table. Keep one only for the length of one
// operation (at most a slice's L1 of bytes), and never take a second in the same thread
// while holding one (a waiting UNMAP could then block the second lock for good).
class DeviceMemory::Access {
public:
    explicit Access(const DeviceMemory& m);
    Access(const Access&) = delete;
    Access& operator=(const Access&) = delete;

    // As DeviceMemory::read and write.
    std::uint32_t read(std::uint64_t va, void* dst, std::uint64_t len, std::uint32_t slice,
                       Traffic& t, std::uint64_t& fault_va);
    std::uint32_t write(std::uint64_t va, const void* src, std::uint64_t len, std::uint32_t slice,
                        Traffic& t, std::uint64_t& fault_va);
    // [va, va+len) is mapped throughout, every replica of every page on this chip (none a
    // peer's).
    bool mapped_here(std::uint64_t va, std::uint64_t len);
    // Where [va, va+len) lies in host memory when `slice` reads it (the replica read()
    // takes): its first byte, when it is mapped to this chip's HBM, unpoisoned and
    // physically contiguous (one run of host bytes); else null.
    const std::byte* host_run(std::uint64_t va, std::uint64_t len, std::uint32_t slice);

private:
    // The replicas of the page holding va, or nullptr: the rows of a tile mostly fall in the
    // page of the row before, so the last page found is remembered.
    const Mmu::Page* find(std::uint64_t va);
    // One page run of a peer's page (data null: only accounts the bytes; no link time is
    // modelled for an access that moves nothing).
    std::uint32_t peer_run(const Mmu::Replica& r, std::uint64_t in_page, std::byte* out,
                           const std::byte* in, std::uint64_t n, Traffic& t);

    const Mmu& mmu_;
    const HbmMemory& mem_;
    std::byte* hbm_;
    Mmu::View view_;
    std::uint64_t last_vpn_ = ~0ull;
    const Mmu::Page* last_page_ = nullptr;
};

}  // namespace jal::emu::exec
