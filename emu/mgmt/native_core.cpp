#include "emu/mgmt/native_core.hpp"

#include "emu/chip/chip.hpp"
#include "firmware/firmware.hpp"

#include <memory>

namespace jal::emu {

namespace {
// Uninstalls the bus however run() is left (a reset unwinds through the firmware).
struct BusInstall {
    explicit BusInstall(jal::fw::hal::NativeBus* bus) { jal::fw::hal::set_native_bus(bus); }
    ~BusInstall() { jal::fw::hal::set_native_bus(nullptr); }
};
}  // namespace

void NativeCore::run()
{
    BusInstall install(this);
    // A fresh firmware object per boot: no state survives a core reset, as on silicon.
    auto fw = std::make_unique<jal::fw::Firmware>();
    fw->run();
}

std::uint32_t NativeCore::read32(std::uint32_t addr)
{
    return chip_.bus().read32(addr);
}
void NativeCore::write32(std::uint32_t addr, std::uint32_t value)
{
    chip_.bus().write32(addr, value);
}
void NativeCore::wait_for_event()
{
    chip_.clock().wait_for_event();
}

std::uint32_t NativeCore::dma(std::uint32_t function, std::uint64_t host_addr, void* local,
                              std::uint32_t len, bool to_host)
{
    return chip_.bus().dma_direct(function, host_addr, local, len, to_host);
}

}  // namespace jal::emu
