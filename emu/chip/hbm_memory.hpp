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

private:
    std::byte* base_;
    std::uint64_t size_;
};

}  // namespace jal::emu
