// What the GDB stub needs from a halted core. Implemented by the Unicorn core (on its own
// thread) and, for the stub's thread, by CoreDebug's forwarding proxy.
#pragma once

#include <array>
#include <cstdint>
#include <span>

namespace jal::emu::gdb {

// The registers of the ARM M-profile core in the order of the 'g' packet: r0-r12, sp, lr,
// pc, xpsr (gdb's org.gnu.gdb.arm.m-profile feature numbers xpsr 25, not 16).
inline constexpr unsigned kNumRegisters = 17;
inline constexpr unsigned kRegSp = 13, kRegLr = 14, kRegPc = 15, kRegXpsr = 16;
using Registers = std::array<std::uint32_t, kNumRegisters>;
inline constexpr std::array<const char*, kNumRegisters> kRegisterNames = {
    "r0", "r1",  "r2",  "r3",  "r4", "r5", "r6", "r7",  "r8",
    "r9", "r10", "r11", "r12", "sp", "lr", "pc", "xpsr"};

// POSIX signal numbers as the protocol reports them.
inline constexpr int kSigInt = 2, kSigTrap = 5, kSigSegv = 11;

class DebugTarget {
public:
    virtual ~DebugTarget() = default;
    virtual Registers registers() = 0;
    virtual bool write_register(unsigned index, std::uint32_t value) = 0;  // index < kNumRegisters
    // False if any byte of the range cannot be accessed.
    virtual bool read_memory(std::uint32_t address, std::span<std::uint8_t> out) = 0;
    virtual bool write_memory(std::uint32_t address, std::span<const std::uint8_t> data) = 0;
    // Breakpoints are execution hooks, never patched code; adding one twice is harmless.
    virtual void set_breakpoint(std::uint32_t address, bool present) = 0;
    // Why the core last stopped: kSigTrap, kSigInt or kSigSegv.
    virtual int stop_signal() = 0;
};

}  // namespace jal::emu::gdb
