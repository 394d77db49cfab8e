#include "emu/chip/hbm_memory.hpp"

#include "jal/hw/admin.h"
#include "jal/hw/chip.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace jal::emu {

namespace {
std::uint64_t poison_words(std::uint64_t size)
{
    return (size / JAL_PAGE_SIZE + 63) / 64;
}
}  // namespace

HbmMemory::HbmMemory()
    : size_(JAL_HBM_TOTAL_BYTES),
      poison_(std::make_unique<std::atomic<std::uint64_t>[]>(poison_words(JAL_HBM_TOTAL_BYTES)))
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

void HbmMemory::clear()
{
    (void)discard(0, size_);
    for (std::uint64_t w = 0; w < poison_words(size_); ++w)
        poison_[w].store(0, std::memory_order_relaxed);
    poisoned_pages_.store(0, std::memory_order_release);
}

void HbmMemory::poison(std::uint64_t addr)
{
    if (addr >= size_) return;
    const std::uint64_t page = addr / JAL_PAGE_SIZE;
    const std::uint64_t bit = 1ull << (page % 64);
    if (!(poison_[page / 64].fetch_or(bit, std::memory_order_acq_rel) & bit))
        poisoned_pages_.fetch_add(1, std::memory_order_release);
}

bool HbmMemory::poisoned_slow(std::uint64_t addr, std::uint64_t len) const
{
    if (len == 0 || addr >= size_) return false;
    const std::uint64_t last = std::min(addr + len - 1, size_ - 1) / JAL_PAGE_SIZE;
    for (std::uint64_t page = addr / JAL_PAGE_SIZE; page <= last; ++page)
        if (poison_[page / 64].load(std::memory_order_acquire) >> (page % 64) & 1) return true;
    return false;
}

bool HbmMemory::discard(std::uint64_t addr, std::uint64_t len)
{
    const auto host_page = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
    if (addr > size_ || len > size_ - addr || addr % host_page || len % host_page) return false;
    // A private anonymous mapping refills discarded pages with zeros on the next touch.
    return madvise(base_ + addr, len, MADV_DONTNEED) == 0;
}

}  // namespace jal::emu
