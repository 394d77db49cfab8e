// Reset: copy .data from flash, zero .bss, run static constructors, enter the firmware.
#include "firmware/hal/hal.hpp"
#include "jal/hw/mgmt.h"

#include <cstdint>
#include <cstring>

extern "C" {
extern std::uint32_t _data_load, _data_start, _data_end, _bss_start, _bss_end;
extern void (*__init_array_start[])();
extern void (*__init_array_end[])();
int main();

[[noreturn]] void jalfw_reset_handler()
{
    std::memcpy(&_data_start, &_data_load,
                reinterpret_cast<std::uintptr_t>(&_data_end) -
                    reinterpret_cast<std::uintptr_t>(&_data_start));
    std::memset(&_bss_start, 0,
                reinterpret_cast<std::uintptr_t>(&_bss_end) -
                    reinterpret_cast<std::uintptr_t>(&_bss_start));
    for (auto* f = __init_array_start; f != __init_array_end; ++f) (*f)();
    main();
    for (;;) __asm volatile("wfi");
}

// A fault leaves the core spinning without feeding the watchdog, which resets it.
[[noreturn]] void jalfw_fault_handler()
{
    for (const char* p = "fault: core halted until watchdog reset\n"; *p; ++p)
        jal::fw::hal::write32(JAL_SYS_CONSOLE, static_cast<std::uint8_t>(*p));
    for (;;) __asm volatile("wfi");
}

// The firmware never exits, and there is no heap or libc I/O behind these.
void _exit(int)
{
    for (;;) __asm volatile("wfi");
}
}
