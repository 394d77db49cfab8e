#include "emu/mgmt/unicorn_core.hpp"

#include "emu/chip/chip.hpp"
#include "emu/util/log.hpp"
#include "jal/hw/mgmt.h"

#include <unicorn/unicorn.h>

#include <cstring>
#include <stdexcept>

namespace jal::emu {

namespace {
constexpr std::uint16_t kThumbWfi = 0xbf30;
constexpr std::uint64_t kPsPerCycle = 1'000'000'000'000ull / JAL_MGMT_CORE_HZ;

void check(uc_err err, const char* what)
{
    if (err != UC_ERR_OK)
        throw std::runtime_error(std::string("unicorn: ") + what + ": " + uc_strerror(err));
}

// Unicorn's numbers for gdb's register order (gdb::kRegisterNames).
constexpr int kUcRegisters[gdb::kNumRegisters] = {
    UC_ARM_REG_R0,  UC_ARM_REG_R1, UC_ARM_REG_R2, UC_ARM_REG_R3, UC_ARM_REG_R4,  UC_ARM_REG_R5,
    UC_ARM_REG_R6,  UC_ARM_REG_R7, UC_ARM_REG_R8, UC_ARM_REG_R9, UC_ARM_REG_R10, UC_ARM_REG_R11,
    UC_ARM_REG_R12, UC_ARM_REG_SP, UC_ARM_REG_LR, UC_ARM_REG_PC, UC_ARM_REG_XPSR};

// Flash or SRAM, the whole range.
bool plain_memory(std::uint32_t address, std::size_t len)
{
    const auto within = [&](std::uint64_t base, std::uint64_t size) {
        return address >= base && address - base + std::uint64_t{len} <= size;
    };
    return within(JAL_MGMT_FLASH_BASE, JAL_MGMT_FLASH_SIZE) ||
           within(JAL_MGMT_SRAM_BASE, JAL_MGMT_SRAM_SIZE);
}

// The presence of any code hook makes Unicorn keep the PC exact at every instruction;
// otherwise a memory fault reports the start of the faulting instruction's block.
void no_op(uc_struct*, std::uint64_t, std::uint32_t, void*) {}
}  // namespace

std::string format_registers(const gdb::Registers& regs)
{
    std::string out;
    for (unsigned i = 0; i < gdb::kNumRegisters; ++i)
        out += fmt::format("{}{}={:#010x}", i ? " " : "", gdb::kRegisterNames[i], regs[i]);
    return out;
}

UnicornCore::UnicornCore(Chip& chip, const FirmwareImage& image, gdb::CoreDebug* debug)
    : chip_(chip), debug_(debug)
{
    check(uc_open(UC_ARCH_ARM, static_cast<uc_mode>(UC_MODE_THUMB | UC_MODE_MCLASS), &uc_), "open");
    check(uc_ctl_set_cpu_model(uc_, UC_CPU_ARM_CORTEX_M7), "select Cortex-M7");
    check(uc_mem_map(uc_, JAL_MGMT_FLASH_BASE, JAL_MGMT_FLASH_SIZE, UC_PROT_READ | UC_PROT_EXEC),
          "map flash");
    check(uc_mem_map(uc_, JAL_MGMT_SRAM_BASE, JAL_MGMT_SRAM_SIZE, UC_PROT_ALL), "map SRAM");
    check(uc_mem_write(uc_, JAL_MGMT_FLASH_BASE, image.bytes.data(), image.bytes.size()),
          "load image");
    check(uc_mmio_map(uc_, JAL_MGMT_PERIPH_BASE, JAL_MGMT_PERIPH_SIZE, &UnicornCore::mmio_read,
                      this, &UnicornCore::mmio_write, this),
          "map peripherals");
    uc_hook hook;
    check(uc_hook_add(uc_, &hook, UC_HOOK_BLOCK, reinterpret_cast<void*>(&UnicornCore::on_block),
                      this, 1, 0),
          "block hook");
    chip_.bus().local_memory = [this](std::uint32_t addr, void* buf, std::uint32_t len,
                                      bool write) {
        if (addr < JAL_MGMT_SRAM_BASE ||
            addr - JAL_MGMT_SRAM_BASE + std::uint64_t{len} > JAL_MGMT_SRAM_SIZE)
            return false;
        return (write ? uc_mem_write(uc_, addr, buf, len) : uc_mem_read(uc_, addr, buf, len)) ==
               UC_ERR_OK;
    };
    if (debug_) debug_->bind(this);
}

UnicornCore::~UnicornCore()
{
    if (debug_) debug_->bind(nullptr);
    chip_.bus().local_memory = nullptr;
    if (uc_) uc_close(uc_);
}

void UnicornCore::flush_cycles()
{
    const std::uint64_t ps = pending_cycles_ * kPsPerCycle + cycle_remainder_ps_;
    pending_cycles_ = 0;
    cycle_remainder_ps_ = ps % 1000;
    if (ps >= 1000) chip_.clock().advance(ps / 1000);
}

void UnicornCore::fail(const std::exception_ptr& e)
{
    if (!stop_reason_) stop_reason_ = e;
    uc_emu_stop(uc_);
}

std::uint64_t UnicornCore::mmio_read(uc_struct*, std::uint64_t offset, unsigned size, void* self)
{
    auto* core = static_cast<UnicornCore*>(self);
    if (core->stop_reason_) return 0;
    try {
        core->flush_cycles();
        if (size != 4) {
            log(LogLevel::warn,
                "chip{}: firmware {}-byte read at {:#x}; peripherals take 32-bit accesses",
                core->chip_.index(), size, JAL_MGMT_PERIPH_BASE + offset);
            return 0;
        }
        return core->chip_.bus().read32(static_cast<std::uint32_t>(JAL_MGMT_PERIPH_BASE + offset));
    } catch (...) {
        core->fail(std::current_exception());
        return 0;
    }
}

void UnicornCore::mmio_write(uc_struct*, std::uint64_t offset, unsigned size, std::uint64_t value,
                             void* self)
{
    auto* core = static_cast<UnicornCore*>(self);
    if (core->stop_reason_) return;
    try {
        core->flush_cycles();
        if (size != 4) {
            log(LogLevel::warn,
                "chip{}: firmware {}-byte write at {:#x}; peripherals take 32-bit accesses",
                core->chip_.index(), size, JAL_MGMT_PERIPH_BASE + offset);
            return;
        }
        core->chip_.bus().write32(static_cast<std::uint32_t>(JAL_MGMT_PERIPH_BASE + offset),
                                  static_cast<std::uint32_t>(value));
    } catch (...) {
        core->fail(std::current_exception());
    }
}

// Thumb code averages about 3 bytes an instruction; one instruction per cycle.
void UnicornCore::on_block(uc_struct*, std::uint64_t, std::uint32_t size, void* self)
{
    auto* core = static_cast<UnicornCore*>(self);
    if (core->debug_ && core->debug_->halt_requested()) {
        core->halt_stop_ = true;
        uc_emu_stop(core->uc_);
    }
    core->pending_cycles_ += (size + 2) / 3;
    if (core->pending_cycles_ < 4096 || core->stop_reason_) return;
    try {
        core->flush_cycles();  // lets the watchdog catch a loop that never touches a peripheral
    } catch (...) {
        core->fail(std::current_exception());
    }
}

void UnicornCore::on_breakpoint(uc_struct* uc, std::uint64_t address, std::uint32_t, void* self)
{
    auto* core = static_cast<UnicornCore*>(self);
    if (core->skip_resume_breakpoint_ && address == core->resume_pc_) {
        core->skip_resume_breakpoint_ = false;
        return;
    }
    core->breakpoint_hit_ = true;
    uc_emu_stop(uc);  // before this instruction executes
}

// Runs from the current PC until the firmware waits (WFI), faults, hits a breakpoint, is
// asked to halt, or (step) has executed one instruction.
int UnicornCore::execute(bool step)
{
    check(uc_reg_read(uc_, UC_ARM_REG_PC, &resume_pc_), "read PC");
    skip_resume_breakpoint_ = true;
    breakpoint_hit_ = false;
    halt_stop_ = false;
    return uc_emu_start(uc_, resume_pc_ | 1, 0xffffffffull, 0, step ? 1 : 0);
}

void UnicornCore::run()
{
    std::uint32_t sp, pc;
    check(uc_mem_read(uc_, JAL_MGMT_FLASH_BASE, &sp, 4), "read vector table");
    check(uc_mem_read(uc_, JAL_MGMT_FLASH_BASE + 4, &pc, 4), "read vector table");
    check(uc_reg_write(uc_, UC_ARM_REG_SP, &sp), "set SP");
    check(uc_reg_write(uc_, UC_ARM_REG_PC, &pc), "set PC");
    bool step = debug_ && debug_->take_wait_at_power_on() && debug_->hold(gdb::kSigTrap);
    for (;;) {
        const int err = execute(step);
        if (stop_reason_) std::rethrow_exception(stop_reason_);
        if (err != UC_ERR_OK) {
            step = on_fault(err);
            continue;
        }
        if (debug_ && (breakpoint_hit_ || step || halt_stop_ || debug_->halt_requested())) {
            const bool trap = breakpoint_hit_ || step;
            // A halt request the debugger withdrew (it left) meanwhile: just run on.
            step = (trap || debug_->take_halt_request()) &&
                   debug_->hold(trap ? gdb::kSigTrap : gdb::kSigInt);
            continue;
        }
        check(uc_reg_read(uc_, UC_ARM_REG_PC, &pc), "read PC");
        std::uint16_t insn = 0;
        if (pc >= 2) uc_mem_read(uc_, pc - 2, &insn, 2);
        if (insn != kThumbWfi) {
            log(LogLevel::error, "chip{}: firmware stopped at pc {:#x} without WFI", chip_.index(),
                pc);
            throw CoreReset{JAL_RESET_CAUSE_WATCHDOG};
        }
        flush_cycles();
        chip_.clock().wait_for_event();  // a debugger's halt may hold the core in here
        step = debug_ && debug_->take_pending_step();
    }
}

// Returns whether the debugger wants a single step; without a debugger it never returns.
bool UnicornCore::on_fault(int err)
{
    const gdb::Registers regs = registers();
    log(LogLevel::error, "chip{}: firmware faulted at pc {:#x}: {}{}", chip_.index(),
        regs[gdb::kRegPc], uc_strerror(static_cast<uc_err>(err)),
        exact_pc_hook_ ? ""
                       : " (without a debugger attached, pc may be the start of the faulting "
                         "instruction's translated block)");
    log(LogLevel::error, "chip{}: fault registers: {}", chip_.index(), format_registers(regs));
    flush_cycles();
    if (debug_ && debug_->attached()) {
        log(LogLevel::info, "chip{}: core held for the debugger (SIGSEGV)", chip_.index());
        return debug_->hold(gdb::kSigSegv);  // then retry from wherever it left the PC
    }
    halt_until_reset();
}

void UnicornCore::halt_until_reset()
{
    log(LogLevel::error, "chip{}: halting the core until the watchdog fires", chip_.index());
    for (;;) {
        chip_.clock().wait_for_event();
        chip_.clock().clear_events(chip_.clock().events());
    }
}

gdb::Registers UnicornCore::registers()
{
    gdb::Registers regs{};
    for (unsigned i = 0; i < gdb::kNumRegisters; ++i)
        check(uc_reg_read(uc_, kUcRegisters[i], &regs[i]), "read register");
    return regs;
}

bool UnicornCore::write_register(unsigned index, std::uint32_t value)
{
    if (index >= gdb::kNumRegisters) return false;
    if (index == gdb::kRegPc) value &= ~1u;  // the Thumb bit is not part of the address
    return uc_reg_write(uc_, kUcRegisters[index], &value) == UC_ERR_OK;
}

bool UnicornCore::read_memory(std::uint32_t address, std::span<std::uint8_t> out)
{
    return plain_memory(address, out.size()) &&
           uc_mem_read(uc_, address, out.data(), out.size()) == UC_ERR_OK;
}

bool UnicornCore::write_memory(std::uint32_t address, std::span<const std::uint8_t> data)
{
    if (!plain_memory(address, data.size()) ||
        uc_mem_write(uc_, address, data.data(), data.size()) != UC_ERR_OK)
        return false;
    // The bytes may be code Unicorn has already translated.
    uc_ctl_remove_cache(uc_, address, address + data.size());
    return true;
}

void UnicornCore::set_breakpoint(std::uint32_t address, bool present)
{
    const auto it = breakpoint_hooks_.find(address);
    if (present == (it != breakpoint_hooks_.end())) return;
    if (present) {
        uc_hook hook;
        check(uc_hook_add(uc_, &hook, UC_HOOK_CODE,
                          reinterpret_cast<void*>(&UnicornCore::on_breakpoint), this, address,
                          address),
              "breakpoint hook");
        breakpoint_hooks_.emplace(address, hook);
    } else {
        uc_hook_del(uc_, it->second);
        breakpoint_hooks_.erase(it);
    }
    // Hooks are compiled into translated code: retranslate the breakpoint's block.
    uc_ctl_remove_cache(uc_, address, address + 4);
}

void UnicornCore::set_exact_pc(bool on)
{
    if (on == (exact_pc_hook_ != 0)) return;
    if (on) {
        uc_hook hook;
        check(uc_hook_add(uc_, &hook, UC_HOOK_CODE, reinterpret_cast<void*>(&no_op), this, 1, 0),
              "exact-PC hook");
        exact_pc_hook_ = hook;
    } else {
        uc_hook_del(uc_, exact_pc_hook_);
        exact_pc_hook_ = 0;
    }
    // Translated code carries its hooks: drop all of it. (Unicorn's full TB flush takes
    // seconds; removing the ranges code can run from is instant.)
    uc_ctl_remove_cache(uc_, JAL_MGMT_FLASH_BASE, JAL_MGMT_FLASH_BASE + JAL_MGMT_FLASH_SIZE);
    uc_ctl_remove_cache(uc_, JAL_MGMT_SRAM_BASE, JAL_MGMT_SRAM_BASE + JAL_MGMT_SRAM_SIZE);
}

}  // namespace jal::emu
