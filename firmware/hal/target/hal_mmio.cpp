// The hardware seam on the Cortex-M7: volatile MMIO on the peripheral window, WFI, and
// the DMA engine programmed through its registers with a real 32-bit local address.
#include "firmware/hal/hal.hpp"

#include "jal/hw/mgmt.h"

#include <cstdint>

namespace jal::fw::hal {

#if !defined(JALFW_HAL_MMIO)
#error "the target HAL is built with JALFW_HAL_MMIO (read32/write32 are inline in hal.hpp)"
#endif

void wait_for_event()
{
    // WFI only sleeps when nothing is pending: the event register is level-triggered.
    if (read32(JAL_SYS_EVENTS) == 0) __asm volatile("wfi" ::: "memory");
}

std::uint32_t dma(std::uint32_t function, std::uint64_t host_addr, void* local, std::uint32_t len,
                  bool to_host)
{
    write32(JAL_DMA_HOST_LO, static_cast<std::uint32_t>(host_addr));
    write32(JAL_DMA_HOST_HI, static_cast<std::uint32_t>(host_addr >> 32));
    write32(JAL_DMA_LOCAL, reinterpret_cast<std::uintptr_t>(local));
    write32(JAL_DMA_LEN, len);
    write32(JAL_DMA_FUNC, function);
    // The compiler must not keep `local` in registers across a transfer the engine makes.
    __asm volatile("" ::: "memory");
    write32(JAL_DMA_CTRL, JAL_DMA_GO | (to_host ? JAL_DMA_TO_HOST : 0u));
    __asm volatile("" ::: "memory");
    return read32(JAL_DMA_STATUS);
}

void crash()
{
    // Outside flash, SRAM and the peripherals: the instruction fetch faults.
    using Entry = void (*)();
    const auto bad = reinterpret_cast<Entry>(std::uintptr_t{0x60000001u});
    bad();
    for (;;) __asm volatile("wfi");
}

std::uint64_t now_us()
{
    const std::uint32_t lo = read32(JAL_SYS_NOW_US_LO);
    const std::uint32_t hi = read32(JAL_SYS_NOW_US_HI);
    return (std::uint64_t{hi} << 32) | lo;
}

}  // namespace jal::fw::hal
