#include "emu/chip/host_memory.hpp"

#include "jal/hw/status.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace jal::emu {

namespace {
bool page_aligned(std::uint64_t v)
{
    return (v & (static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) - 1)) == 0;
}

// Address space only: no memory, no commit charge, no access.
void* reserve_at(void* addr, std::uint64_t size)
{
    return mmap(addr, size, PROT_NONE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | (addr ? MAP_FIXED : 0), -1, 0);
}
}  // namespace

bool HostMemory::shrink_sealed(int fd)
{
    const int seals = fcntl(fd, F_GET_SEALS);
    return seals >= 0 && (seals & F_SEAL_SHRINK);
}

HostMemory::~HostMemory()
{
    clear();
}

bool HostMemory::reserve_window()
{
    if (window_) return true;
    if (window_failed_) return false;
    void* p = reserve_at(nullptr, kWindowBytes);
    if (p == MAP_FAILED) {
        window_failed_ = true;
        return false;
    }
    window_ = static_cast<std::byte*>(p);
    return true;
}

void HostMemory::drop_window()
{
    if (!window_) return;
    // Unmap the reservation around any hole (which may belong to someone else by now).
    std::uint64_t from = 0;
    std::sort(holes_.begin(), holes_.end());
    for (const auto& [at, size] : holes_) {
        if (at > from) munmap(window_ + from, at - from);
        from = std::max(from, at + size);
    }
    if (from < kWindowBytes) munmap(window_ + from, kWindowBytes - from);
    holes_.clear();
    window_ = nullptr;
}

std::uint32_t HostMemory::place(std::uint64_t bus_addr, std::uint64_t size, int fd,
                                std::uint64_t fd_offset, Region& out)
{
    const bool fits = bus_addr < kWindowBytes && size <= kWindowBytes - bus_addr;
    const bool in_window = fits && reserve_window();
    void* want = in_window ? window_ + bus_addr : nullptr;
    void* p = mmap(want, size, PROT_READ | PROT_WRITE, MAP_SHARED | (in_window ? MAP_FIXED : 0), fd,
                   static_cast<off_t>(fd_offset));
    if (p == MAP_FAILED) {
        const int err = errno;
        // A failed MAP_FIXED may already have removed the reservation there.
        if (in_window && reserve_at(want, size) == MAP_FAILED) holes_.emplace_back(bus_addr, size);
        return err == ENOMEM ? JAL_STATUS_NO_MEMORY : JAL_STATUS_INVALID_FIELD;
    }
    out = Region{size, static_cast<std::byte*>(p), in_window};
    return JAL_STATUS_OK;
}

void HostMemory::release(const Region& r, std::uint64_t bus_addr)
{
    if (!r.in_window) {
        munmap(r.ptr, r.size);
    } else if (reserve_at(r.ptr, r.size) == MAP_FAILED) {
        munmap(r.ptr, r.size);
        holes_.emplace_back(bus_addr, r.size);
    }
}

std::uint32_t HostMemory::map(std::uint64_t bus_addr, std::uint64_t size, int fd,
                              std::uint64_t fd_offset)
{
    if (size == 0 || !page_aligned(bus_addr) || !page_aligned(size) || !page_aligned(fd_offset) ||
        bus_addr + size < bus_addr)
        return JAL_STATUS_INVALID_FIELD;
    if (!shrink_sealed(fd)) return JAL_STATUS_PERMISSION;
    // The memfd may be shorter than claimed: touching past its end would SIGBUS, so check.
    // It cannot shrink later (F_SEAL_SHRINK, checked above).
    struct stat st {};
    if (fstat(fd, &st) != 0) return JAL_STATUS_INVALID_FIELD;
    if (static_cast<std::uint64_t>(st.st_size) < fd_offset + size || fd_offset + size < fd_offset)
        return JAL_STATUS_INVALID_LENGTH;
    std::unique_lock lock(mutex_);
    if (regions_.size() >= kMaxRegions) return JAL_STATUS_NO_MEMORY;
    // Reject overlap with the region before and the one after.
    auto next = regions_.lower_bound(bus_addr);
    if (next != regions_.end() && next->first < bus_addr + size) return JAL_STATUS_INVALID_FIELD;
    if (next != regions_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second.size > bus_addr) return JAL_STATUS_INVALID_FIELD;
    }
    for (const auto& [at, n] : holes_)
        if (bus_addr < at + n && at < bus_addr + size) return JAL_STATUS_NO_MEMORY;
    Region r{};
    const std::uint32_t st_place = place(bus_addr, size, fd, fd_offset, r);
    if (st_place != JAL_STATUS_OK) return st_place;
    regions_.emplace(bus_addr, r);
    return JAL_STATUS_OK;
}

std::uint32_t HostMemory::unmap(std::uint64_t bus_addr, std::uint64_t size)
{
    std::unique_lock lock(mutex_);
    auto it = regions_.find(bus_addr);
    if (it == regions_.end() || it->second.size != size) return JAL_STATUS_INVALID_FIELD;
    release(it->second, bus_addr);
    regions_.erase(it);
    ++generation_;
    return JAL_STATUS_OK;
}

void HostMemory::clear()
{
    std::unique_lock lock(mutex_);
    for (auto& [addr, r] : regions_)
        if (!r.in_window) munmap(r.ptr, r.size);
    regions_.clear();
    drop_window();  // the window's regions go with it
    ++generation_;
}

std::size_t HostMemory::region_count() const
{
    std::shared_lock lock(mutex_);
    return regions_.size();
}

std::byte* HostMemory::resolve(std::uint64_t bus_addr, std::uint64_t len) const
{
    if (len == 0 || bus_addr + len < bus_addr) return nullptr;
    auto it = regions_.upper_bound(bus_addr);
    if (it == regions_.begin()) return nullptr;
    --it;
    const std::uint64_t off = bus_addr - it->first;
    if (off >= it->second.size) return nullptr;
    std::byte* const p = it->second.ptr + off;
    // Further regions count only if they follow on the bus and in memory (the window).
    for (std::uint64_t have = it->second.size - off; have < len; have += it->second.size) {
        auto next = std::next(it);
        if (next == regions_.end() || next->first != it->first + it->second.size ||
            next->second.ptr != it->second.ptr + it->second.size)
            return nullptr;
        it = next;
    }
    return p;
}

std::uint32_t HostMemory::read(std::uint64_t bus_addr, void* dst, std::uint64_t len) const
{
    std::shared_lock lock(mutex_);
    const std::byte* p = resolve(bus_addr, len);
    if (!p) return JAL_STATUS_DMA_FAULT;
    std::memcpy(dst, p, len);
    return JAL_STATUS_OK;
}

std::uint32_t HostMemory::write(std::uint64_t bus_addr, const void* src, std::uint64_t len)
{
    std::shared_lock lock(mutex_);  // the map is not changed, only the shared pages
    std::byte* p = resolve(bus_addr, len);
    if (!p) return JAL_STATUS_DMA_FAULT;
    // Like posted PCIe writes, a transfer lands in address order: the last 8 bytes become
    // visible after everything before them, so a phase bit or signal value stored there is
    // a valid "the rest is written" flag for the host.
    if (len <= 8 || (reinterpret_cast<std::uintptr_t>(p + len - 8) & 7) != 0) {
        std::memcpy(p, src, len);
        return JAL_STATUS_OK;
    }
    std::memcpy(p, src, len - 8);
    std::uint64_t tail;
    std::memcpy(&tail, static_cast<const std::byte*>(src) + len - 8, 8);
    __atomic_store_n(reinterpret_cast<std::uint64_t*>(p + len - 8), tail, __ATOMIC_RELEASE);
    return JAL_STATUS_OK;
}

}  // namespace jal::emu
