// What the native firmware build calls instead of MMIO: the emulator (or a unit test's
// fake) implements NativeBus and installs it for the thread that runs the firmware.
#pragma once

#include <cstdint>

namespace jal::fw::hal {

class NativeBus {
public:
    virtual ~NativeBus() = default;
    virtual std::uint32_t read32(std::uint32_t addr) = 0;
    virtual void write32(std::uint32_t addr, std::uint32_t value) = 0;
    virtual void wait_for_event() = 0;
    virtual std::uint32_t dma(std::uint32_t function, std::uint64_t host_addr, void* local,
                              std::uint32_t len, bool to_host) = 0;
};

// Installs the bus for the calling thread (one firmware instance per thread, so several
// emulated chips can run native firmware in one process).
void set_native_bus(NativeBus* bus);
NativeBus* native_bus();

}  // namespace jal::fw::hal
