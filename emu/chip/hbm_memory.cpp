#include "emu/chip/hbm_memory.hpp"

#include "jal/hw/chip.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace jal::emu {

HbmMemory::HbmMemory() : size_(JAL_HBM_TOTAL_BYTES)
{
    // MAP_NORESERVE: 216 GiB of address space, no commit charge until pages are written.
    void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        throw std::runtime_error(std::string("cannot reserve HBM address space: ") +
                                 std::strerror(errno));
    base_ = static_cast<std::byte*>(p);
}

HbmMemory::~HbmMemory()
{
    munmap(base_, size_);
}

std::span<std::byte> HbmMemory::range(std::uint64_t addr, std::uint64_t len)
{
    if (addr > size_ || len > size_ - addr) return {};
    return {base_ + addr, static_cast<std::size_t>(len)};
}

bool HbmMemory::discard(std::uint64_t addr, std::uint64_t len)
{
    const auto host_page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    if (addr > size_ || len > size_ - addr || addr % host_page || len % host_page) return false;
    // A private anonymous mapping refills discarded pages with zeros on the next touch.
    return madvise(base_ + addr, len, MADV_DONTNEED) == 0;
}

}  // namespace jal::emu
