#include "emu/chip/host_memory.hpp"

#include "jal/hw/status.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <mutex>

namespace jal::emu {

namespace {
constexpr std::size_t kMaxRegions = 4096;
bool page_aligned(std::uint64_t v)
{
    return (v & (static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)) - 1)) == 0;
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

std::uint32_t HostMemory::map(std::uint64_t bus_addr, std::uint64_t size, int fd,
                              std::uint64_t fd_offset)
{
    if (size == 0 || !page_aligned(bus_addr) || !page_aligned(size) || !page_aligned(fd_offset) ||
        bus_addr + size < bus_addr)
        return JAL_STATUS_INVALID_FIELD;
    if (!shrink_sealed(fd)) return JAL_STATUS_PERMISSION;
    std::unique_lock lock(mutex_);
    if (regions_.size() >= kMaxRegions) return JAL_STATUS_NO_MEMORY;
    // Reject overlap with the region before and the one after.
    auto next = regions_.lower_bound(bus_addr);
    if (next != regions_.end() && next->first < bus_addr + size) return JAL_STATUS_INVALID_FIELD;
    if (next != regions_.begin()) {
        auto prev = std::prev(next);
        if (prev->first + prev->second.size > bus_addr) return JAL_STATUS_INVALID_FIELD;
    }
    void* p =
        mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, static_cast<off_t>(fd_offset));
    if (p == MAP_FAILED) return JAL_STATUS_INVALID_FIELD;
    // The memfd may be shorter than claimed: touching past its end would SIGBUS, so check.
    // It cannot shrink later (F_SEAL_SHRINK, checked above).
    struct stat st {};
    if (fstat(fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < fd_offset + size) {
        munmap(p, size);
        return JAL_STATUS_INVALID_LENGTH;
    }
    regions_.emplace(bus_addr, Region{size, static_cast<std::byte*>(p)});
    return JAL_STATUS_OK;
}

std::uint32_t HostMemory::unmap(std::uint64_t bus_addr, std::uint64_t size)
{
    std::unique_lock lock(mutex_);
    auto it = regions_.find(bus_addr);
    if (it == regions_.end() || it->second.size != size) return JAL_STATUS_INVALID_FIELD;
    munmap(it->second.ptr, it->second.size);
    regions_.erase(it);
    ++generation_;
    return JAL_STATUS_OK;
}

void HostMemory::clear()
{
    std::unique_lock lock(mutex_);
    for (auto& [addr, r] : regions_) munmap(r.ptr, r.size);
    regions_.clear();
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
    if (off >= it->second.size || len > it->second.size - off) return nullptr;
    return it->second.ptr + off;
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
