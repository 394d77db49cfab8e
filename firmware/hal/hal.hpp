// The one hardware seam of the firmware. On the Cortex-M7 image these are volatile MMIO
// accesses (target/hal_mmio.cpp); in the native build they are direct calls into the
// emulator's peripheral models (native/hal_native.cpp). Nothing else in firmware/ touches
// hardware.
#pragma once

#include <cstdint>

namespace jal::fw::hal {

// Peripheral register access; addresses are JAL_MGMT_* from jal/hw/mgmt.h.
#if defined(JALFW_HAL_MMIO)
// The Cortex-M7 image (platform/cortex-m7 defines JALFW_HAL_MMIO): inline volatile
// accesses, so a register access is one load or store, not a call.
inline std::uint32_t read32(std::uint32_t addr)
{
    return *reinterpret_cast<volatile std::uint32_t*>(addr);
}
inline void write32(std::uint32_t addr, std::uint32_t value)
{
    *reinterpret_cast<volatile std::uint32_t*>(addr) = value;
}
#else
std::uint32_t read32(std::uint32_t addr);
void write32(std::uint32_t addr, std::uint32_t value);
#endif

// Sleep until an event (JAL_SYS_EVENTS) is pending. Modelled time advances here.
void wait_for_event();

// Copy between firmware memory and a host function's memory through the DMA engine.
// Returns a jal_status.
std::uint32_t dma(std::uint32_t function, std::uint64_t host_addr, void* local, std::uint32_t len,
                  bool to_host);

// An injected crash: on the Cortex-M7 a jump to unmapped memory (the core faults and halts
// until the watchdog resets it); natively the bus halts the core the same way.
[[noreturn]] void crash();

// Modelled time since power-on, from JAL_SYS_NOW_US_LO/HI.
std::uint64_t now_us();

}  // namespace jal::fw::hal
