// The Cortex-M7 vector table: initial stack pointer, reset handler, fault handlers. The
// firmware polls an event register instead of taking interrupts, so IRQ slots stay unused.
#include <cstdint>

extern "C" {
extern std::uint32_t _stack_top;
[[noreturn]] void jalfw_reset_handler();
[[noreturn]] void jalfw_fault_handler();
}

using Handler = void (*)();

__attribute__((section(".vectors"), used)) const Handler jalfw_vectors[16] = {
    reinterpret_cast<Handler>(&_stack_top),
    jalfw_reset_handler,
    jalfw_fault_handler,  // NMI
    jalfw_fault_handler,  // HardFault
    jalfw_fault_handler,  // MemManage
    jalfw_fault_handler,  // BusFault
    jalfw_fault_handler,  // UsageFault
    nullptr,
    nullptr,
    nullptr,
    nullptr,
    jalfw_fault_handler,  // SVCall
    jalfw_fault_handler,  // DebugMonitor
    nullptr,
    jalfw_fault_handler,  // PendSV
    jalfw_fault_handler,  // SysTick
};
