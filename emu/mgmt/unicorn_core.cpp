#include "emu/mgmt/unicorn_core.hpp"

#include "emu/chip/chip.hpp"
#include "emu/util/log.hpp"
#include "jal/hw/mgmt.h"

#include <unicorn/unicorn.h>

#include <cstring>
#include <fstream>
#include <iterator>
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
}  // namespace

FirmwareImage load_firmware_image(const std::string& path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot read firmware image " + path);
    FirmwareImage img{{std::istreambuf_iterator<char>(in), {}}, path};
    if (img.bytes.size() < 64 || img.bytes.size() > JAL_MGMT_FLASH_SIZE)
        throw std::runtime_error("firmware image " + path + " has an impossible size (" +
                                 std::to_string(img.bytes.size()) + " bytes)");
    std::uint32_t sp, pc;
    std::memcpy(&sp, img.bytes.data(), 4);
    std::memcpy(&pc, img.bytes.data() + 4, 4);
    if (sp < JAL_MGMT_SRAM_BASE || sp > JAL_MGMT_SRAM_BASE + JAL_MGMT_SRAM_SIZE || !(pc & 1) ||
        (pc & ~1u) >= img.bytes.size())
        throw std::runtime_error("firmware image " + path + " has no valid vector table");
    return img;
}

UnicornCore::UnicornCore(Chip& chip, const FirmwareImage& image) : chip_(chip)
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
}

UnicornCore::~UnicornCore()
{
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
    core->pending_cycles_ += (size + 2) / 3;
    if (core->pending_cycles_ < 4096 || core->stop_reason_) return;
    try {
        core->flush_cycles();  // lets the watchdog catch a loop that never touches a peripheral
    } catch (...) {
        core->fail(std::current_exception());
    }
}

void UnicornCore::run()
{
    std::uint32_t sp, pc;
    check(uc_mem_read(uc_, JAL_MGMT_FLASH_BASE, &sp, 4), "read vector table");
    check(uc_mem_read(uc_, JAL_MGMT_FLASH_BASE + 4, &pc, 4), "read vector table");
    check(uc_reg_write(uc_, UC_ARM_REG_SP, &sp), "set SP");
    for (;;) {
        const uc_err err = uc_emu_start(uc_, pc | 1, 0xffffffffull, 0, 0);
        if (stop_reason_) std::rethrow_exception(stop_reason_);
        check(uc_reg_read(uc_, UC_ARM_REG_PC, &pc), "read PC");
        if (err != UC_ERR_OK) {
            log(LogLevel::error,
                "chip{}: firmware faulted at pc {:#x}: {}; halting the core until the watchdog "
                "fires",
                chip_.index(), pc, uc_strerror(err));
            for (;;) {
                chip_.clock().wait_for_event();
                chip_.clock().clear_events(chip_.clock().events());
            }
        }
        std::uint16_t insn = 0;
        if (pc >= 2) uc_mem_read(uc_, pc - 2, &insn, 2);
        if (insn != kThumbWfi) {
            log(LogLevel::error, "chip{}: firmware stopped at pc {:#x} without WFI", chip_.index(),
                pc);
            throw CoreReset{JAL_RESET_CAUSE_WATCHDOG};
        }
        flush_cycles();
        chip_.clock().wait_for_event();
    }
}

}  // namespace jal::emu
