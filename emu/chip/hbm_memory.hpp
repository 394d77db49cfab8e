// Device memory: the chip's whole HBM as one sparse reservation of the host address space.
// Device physical addresses index it directly; only pages that are touched use host memory.
#pragma once

#include <cstddef>
#include <cstdint>
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
    // Every byte of the device reads as zero again (a chip reset).
    void clear() { (void)discard(0, size_); }

private:
    std::byte* base_;
    std::uint64_t size_;
};

}  // namespace jal::emu
