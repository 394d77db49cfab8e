// Runs the firmware image built for the Cortex-M7 (what would be flashed) on Unicorn.
// Peripheral accesses go to the chip's PeripheralBus through MMIO callbacks; modelled
// time advances by executed instructions (one per cycle at JAL_MGMT_CORE_HZ) and by
// peripheral access costs; WFI returns control to the chip, which waits for an event.
// Returns only by exception: CoreReset or CoreShutdown.
//
// With a debugger (CoreDebug, jal-emu --gdb) the core also stops at breakpoints (execution
// hooks on single addresses, so code is never patched and costs nothing elsewhere), after a
// single step, on a halt request (checked once per translated block) and on a fault, and is
// then held for the debugger. Without one, none of these hooks exist.
#pragma once

#include "emu/gdb/core_debug.hpp"

#include <cstdint>
#include <exception>
#include <map>
#include <string>
#include <vector>

struct uc_struct;

namespace jal::emu {

class Chip;

// What the core runs: the body of the slot the boot ROM chose (raw flash contents, vector
// table at offset 0; already verified, boot_rom.hpp), and the file it came from.
struct FirmwareImage {
    std::vector<std::uint8_t> bytes;
    std::string path;
};

class UnicornCore : public gdb::HeldCore {
public:
    // `debug` may be null (no --gdb).
    UnicornCore(Chip& chip, const FirmwareImage& image, gdb::CoreDebug* debug);
    ~UnicornCore() override;
    UnicornCore(const UnicornCore&) = delete;
    UnicornCore& operator=(const UnicornCore&) = delete;

    void run();

    // gdb::HeldCore: the core's thread, outside run()'s emulation. Memory is flash and
    // SRAM only: peripheral registers have side effects a debugger read must not trigger.
    gdb::Registers registers() override;
    bool write_register(unsigned index, std::uint32_t value) override;
    bool read_memory(std::uint32_t address, std::span<std::uint8_t> out) override;
    bool write_memory(std::uint32_t address, std::span<const std::uint8_t> data) override;
    void set_breakpoint(std::uint32_t address, bool present) override;
    void set_exact_pc(bool on) override;

private:
    int execute(bool step);  // a uc_err
    bool on_fault(int err);
    [[noreturn]] void halt_until_reset();
    static void on_breakpoint(uc_struct* uc, std::uint64_t address, std::uint32_t size, void* self);
    static std::uint64_t mmio_read(uc_struct* uc, std::uint64_t offset, unsigned size, void* self);
    static void mmio_write(uc_struct* uc, std::uint64_t offset, unsigned size, std::uint64_t value,
                           void* self);
    static void on_block(uc_struct* uc, std::uint64_t address, std::uint32_t size, void* self);
    void flush_cycles();
    void fail(const std::exception_ptr& e);

    Chip& chip_;
    uc_struct* uc_ = nullptr;
    std::uint64_t pending_cycles_ = 0;
    std::uint64_t cycle_remainder_ps_ = 0;
    std::exception_ptr stop_reason_;  // a reset or shutdown raised inside a callback
    gdb::CoreDebug* const debug_;
    std::map<std::uint32_t, std::size_t> breakpoint_hooks_;  // address -> uc_hook
    std::size_t exact_pc_hook_ = 0;                          // 0: none
    // Resuming at a breakpoint must execute it, not stop again: the first hit at the
    // resume address is skipped.
    std::uint32_t resume_pc_ = 0;
    bool skip_resume_breakpoint_ = false;
    bool breakpoint_hit_ = false;
    bool halt_stop_ = false;  // the block hook stopped emulation for a halt request
};

// "r0=0x00000000 r1=... xpsr=0x01000000", for the log.
std::string format_registers(const gdb::Registers& regs);

}  // namespace jal::emu
