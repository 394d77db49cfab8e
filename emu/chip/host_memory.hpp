// One host function's memory as the device sees it: regions the client shared (memfds
// mapped here) at bus addresses it chose. DMA copies walk these regions; an address
// outside them is a DMA fault, never a crash.
//
// Regions in the first kWindowBytes of bus addresses are mapped at their bus address in
// one reserved window of this process's address space, so regions that follow each other
// on the bus also follow each other in memory and one DMA may run across them, as across
// the pages of an IOMMU mapping (the QEMU device behind a vIOMMU shares guest memory one
// IOMMU page at a time). Regions above the window are mapped anywhere and stand alone.
#pragma once

#include <cstdint>
#include <map>
#include <shared_mutex>
#include <vector>

namespace jal::emu {

class HostMemory {
public:
    HostMemory() = default;
    ~HostMemory();
    HostMemory(const HostMemory&) = delete;
    HostMemory& operator=(const HostMemory&) = delete;

    // Maps [fd_offset, fd_offset+size) of fd at bus_addr. Returns a jal_status:
    // JAL_STATUS_PERMISSION when fd is not sealed against shrinking (F_SEAL_SHRINK), since
    // the owner could otherwise truncate it under the mapping and make the emulator SIGBUS.
    std::uint32_t map(std::uint64_t bus_addr, std::uint64_t size, int fd, std::uint64_t fd_offset);
    std::uint32_t unmap(std::uint64_t bus_addr, std::uint64_t size);
    void clear();

    // Copies between device-side memory and host bus addresses. Returns a jal_status;
    // nothing is copied on a fault.
    std::uint32_t read(std::uint64_t bus_addr, void* dst, std::uint64_t len) const;
    std::uint32_t write(std::uint64_t bus_addr, const void* src, std::uint64_t len);

    std::size_t region_count() const;
    static constexpr std::uint64_t kWindowBytes = 1ull << 36;  // 64 GiB of bus addresses
    static constexpr std::size_t kMaxRegions = 65536;
    // True if fd carries F_SEAL_SHRINK (a memfd created with MFD_ALLOW_SEALING and sealed).
    static bool shrink_sealed(int fd);

    // Direct access for the command processor's queue engines: holds the map's shared lock
    // so no region is unmapped while the pin lives (unmap() and clear() wait for it). Host
    // pointers obtained through a pin are valid until the pin ends; generation() changes
    // whenever a region is removed, so a pointer kept across pins is re-resolved first.
    class Pin {
    public:
        explicit Pin(const HostMemory& m) : lock_(m.mutex_), mem_(&m) {}
        std::byte* at(std::uint64_t bus_addr, std::uint64_t len) const
        {
            return mem_->resolve(bus_addr, len);
        }
        std::uint64_t generation() const { return mem_->generation_; }

    private:
        std::shared_lock<std::shared_mutex> lock_;
        const HostMemory* mem_;
    };

private:
    struct Region {
        std::uint64_t size;
        std::byte* ptr;
        bool in_window;
    };
    // The host pointer for [bus_addr, bus_addr+len) if it lies inside one region, or
    // inside regions that follow each other without a gap both on the bus and in memory.
    std::byte* resolve(std::uint64_t bus_addr, std::uint64_t len) const;
    // mmap of the file range for a new region: in the window when it fits there.
    std::uint32_t place(std::uint64_t bus_addr, std::uint64_t size, int fd, std::uint64_t fd_offset,
                        Region& out);
    void release(const Region& r, std::uint64_t bus_addr);
    bool reserve_window();
    void drop_window();

    mutable std::shared_mutex mutex_;
    std::map<std::uint64_t, Region> regions_;  // by bus address
    std::uint64_t generation_ = 0;             // bumped when a region goes away
    std::byte* window_ = nullptr;              // PROT_NONE reservation, made on first use
    bool window_failed_ = false;               // could not reserve: map regions anywhere
    // Parts of the window lost when restoring the reservation failed (never mapped
    // again, never unmapped by us: something else may live there now).
    std::vector<std::pair<std::uint64_t, std::uint64_t>> holes_;
};

}  // namespace jal::emu
