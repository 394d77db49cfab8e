// Device memory: the chip's whole HBM as one sparse reservation of the host address space.
// Device physical addresses index it directly; only pages that are touched use host memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace jal::emu {

class HbmMemory {
public:
    HbmMemory();
    ~HbmMemory();
    HbmMemory(const HbmMemory&) = delete;
    HbmMemory& operator=(const HbmMemory&) = delete;

    std::uint64_t size() const { return size_; }
    // The bytes [addr, addr+len), or an empty span when any part is outside the device.
    std::span<std::byte> range(std::uint64_t addr, std::uint64_t len);
    // Makes [addr, addr+len) read as zero and gives its host memory back; both ends must be
    // host-page aligned. False when the range is outside the device or misaligned.
    bool discard(std::uint64_t addr, std::uint64_t len);
    // Every byte of the device reads as zero again and nothing is poisoned (a chip reset).
    void clear();

    // Uncorrectable ECC errors (fault injection): the JAL_PAGE_SIZE page holding `addr`
    // reads as lost until the next chip reset. Any thread.
    void poison(std::uint64_t addr);
    // Whether any byte of [addr, addr+len) is in a poisoned page.
    bool poisoned(std::uint64_t addr, std::uint64_t len) const
    {
        return poisoned_pages_.load(std::memory_order_acquire) != 0 && poisoned_slow(addr, len);
    }

private:
    bool poisoned_slow(std::uint64_t addr, std::uint64_t len) const;

    std::byte* base_;
    std::uint64_t size_;
    // One bit per device page; the count lets reads skip the bitmap on a healthy chip.
    std::unique_ptr<std::atomic<std::uint64_t>[]> poison_;
    std::atomic<std::uint32_t> poisoned_pages_{0};
};

}  // namespace jal::emu
