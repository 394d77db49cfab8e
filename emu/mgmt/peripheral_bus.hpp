// Address decode of the management core's peripheral window (jal/hw/mgmt.h) onto the
// chip's models. The native firmware build and the Unicorn-run image both come through
// here, so register semantics live in one place.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace jal::emu {

class Chip;

class PeripheralBus {
public:
    explicit PeripheralBus(Chip& chip);

    // Each access costs JAL_MGMT_MMIO_NS of modelled time (and may throw CoreReset).
    std::uint32_t read32(std::uint32_t addr);
    void write32(std::uint32_t addr, std::uint32_t value);
    // The DMA engine with a host pointer for the firmware side (native build).
    std::uint32_t dma_direct(std::uint32_t fn, std::uint64_t host_addr, void* local,
                             std::uint32_t len, bool to_host);

    // How the register-programmed DMA reaches management-core memory (set by the Unicorn
    // core; absent natively, where firmware pointers are not 32-bit bus addresses).
    std::function<bool(std::uint32_t addr, void* buf, std::uint32_t len, bool write)> local_memory;

    void reset();

private:
    std::uint32_t sys_read(std::uint32_t off);
    void sys_write(std::uint32_t off, std::uint32_t value);
    void dma_write(std::uint32_t off, std::uint32_t value);
    void console_byte(char c);

    Chip& chip_;
    std::uint32_t now_hi_latch_ = 0;
    std::uint64_t dma_host_ = 0;
    std::uint32_t dma_local_ = 0, dma_len_ = 0, dma_fn_ = 0, dma_status_ = 0;
    std::string console_line_;
};

}  // namespace jal::emu
