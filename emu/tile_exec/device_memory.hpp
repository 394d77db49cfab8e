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

// Bytes moved, split by where they live relative to the accessing slice.
struct Traffic {
    std::uint64_t local = 0, remote = 0;
    Traffic& operator+=(const Traffic& o)
    {
        local += o.local;
        remote += o.remote;
        return *this;
    }
};

class DeviceMemory {
public:
    DeviceMemory(HbmMemory& hbm, const Mmu& mmu, std::uint32_t ctx);

    // [va, va+len) is mapped throughout (else the caller reports PAGE_FAULT at va).
    bool mapped(std::uint64_t va, std::uint64_t len) const;
    // Copies device bytes to `dst` (dst null: only accounts traffic). Returns a jal_status;
    // PAGE_FAULT leaves `fault_va` at the first unmapped page.
    std::uint32_t read(std::uint64_t va, void* dst, std::uint64_t len, std::uint32_t slice,
                       Traffic& t, std::uint64_t& fault_va) const;
    // Writes to every replica (src null: only accounts traffic). Check mapped() first:
    // a fault half way leaves the earlier pages written.
    std::uint32_t write(std::uint64_t va, const void* src, std::uint64_t len, std::uint32_t slice,
                        Traffic& t, std::uint64_t& fault_va);

    std::uint32_t ctx() const { return ctx_; }

private:
    std::byte* hbm_;
    const Mmu& mmu_;
    std::uint32_t ctx_;
};

}  // namespace jal::emu::exec
