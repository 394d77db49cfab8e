// What the native firmware build calls instead of MMIO: the emulator (or a unit test's
// fake) implements NativeBus and installs it for the thread that runs the firmware.
#pragma once

#include <cstdint>

#include "jal/hw/mgmt.h"

namespace jal::fw::hal {

class NativeBus {
public:
    virtual ~NativeBus() = default;
    virtual std::uint32_t read32(std::uint32_t addr) = 0;
    virtual void write32(std::uint32_t addr, std::uint32_t value) = 0;
    virtual void wait_for_event() = 0;
    virtual std::uint32_t dma(std::uint32_t function, std::uint64_t host_addr, void* local,
                              std::uint32_t len, bool to_host) = 0;
    // The core stops, as after a fault: it sleeps through every event without feeding the
    // watchdog, which resets it (wait_for_event throws the reset out of here).
    [[noreturn]] virtual void halt()
    {
        for (;;) {
            wait_for_event();
            write32(JAL_SYS_EVENTS_CLEAR, read32(JAL_SYS_EVENTS));
        }
    }
};

// Installs the bus for the calling thread (one firmware instance per thread, so several
// emulated chips can run native firmware in one process).
void set_native_bus(NativeBus* bus);
NativeBus* native_bus();

}  // namespace jal::fw::hal
