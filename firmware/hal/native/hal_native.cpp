#include "firmware/hal/native/native_bus.hpp"

#include "firmware/hal/hal.hpp"
#include "jal/hw/mgmt.h"

namespace jal::fw::hal {

namespace {
thread_local NativeBus* current_bus = nullptr;
}  // namespace

void set_native_bus(NativeBus* bus)
{
    current_bus = bus;
}
NativeBus* native_bus()
{
    return current_bus;
}

std::uint32_t read32(std::uint32_t addr)
{
    return current_bus->read32(addr);
}
void write32(std::uint32_t addr, std::uint32_t value)
{
    current_bus->write32(addr, value);
}
void wait_for_event()
{
    current_bus->wait_for_event();
}

std::uint32_t dma(std::uint32_t function, std::uint64_t host_addr, void* local, std::uint32_t len,
                  bool to_host)
{
    return current_bus->dma(function, host_addr, local, len, to_host);
}

void crash()
{
    for (;;) current_bus->halt();
}

std::uint64_t now_us()
{
    const std::uint32_t lo = read32(JAL_SYS_NOW_US_LO);
    const std::uint32_t hi = read32(JAL_SYS_NOW_US_HI);
    return (std::uint64_t{hi} << 32) | lo;
}

}  // namespace jal::fw::hal
