// Runs the native build of the firmware sources on the calling thread, with the firmware's
// hardware seam (hal::NativeBus) wired to the chip's peripheral bus. Returns only by
// exception: CoreReset (the runner restarts it) or CoreShutdown.
#pragma once

#include "firmware/hal/native/native_bus.hpp"

namespace jal::emu {

class Chip;

class NativeCore final : public jal::fw::hal::NativeBus {
public:
    explicit NativeCore(Chip& chip) : chip_(chip) {}
    void run();

    std::uint32_t read32(std::uint32_t addr) override;
    void write32(std::uint32_t addr, std::uint32_t value) override;
    void wait_for_event() override;
    std::uint32_t dma(std::uint32_t function, std::uint64_t host_addr, void* local,
                      std::uint32_t len, bool to_host) override;

private:
    Chip& chip_;
};

}  // namespace jal::emu
