#include "emu/mgmt/peripheral_bus.hpp"

#include "emu/fabric/domain.hpp"

#include "emu/chip/chip.hpp"
#include "emu/util/log.hpp"
#include "jal/hw/fw_image.h"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

#include <array>

namespace jal::emu {

namespace {
constexpr std::uint32_t off_in(std::uint32_t abs, std::uint32_t block)
{
    return abs - JAL_MGMT_PERIPH_BASE - block;
}
constexpr std::uint32_t kMaxConsoleLine = 200;
}  // namespace

PeripheralBus::PeripheralBus(Chip& chip) : chip_(chip) {}

void PeripheralBus::reset()
{
    now_hi_latch_ = 0;
    dma_host_ = 0;
    dma_local_ = dma_len_ = dma_fn_ = dma_status_ = 0;
    console_line_.clear();
}

std::uint32_t PeripheralBus::read32(std::uint32_t addr)
{
    chip_.clock().advance(JAL_MGMT_MMIO_NS);
    if (addr < JAL_MGMT_PERIPH_BASE || addr >= JAL_MGMT_PERIPH_BASE + JAL_MGMT_PERIPH_SIZE ||
        addr % 4) {
        log(LogLevel::warn, "chip{}: firmware read of unmapped address {:#x}", chip_.index(), addr);
        return 0;
    }
    const std::uint32_t rel = addr - JAL_MGMT_PERIPH_BASE;
    if (rel < JAL_MGMT_WDT) return sys_read(rel);
    if (rel < JAL_MGMT_HOSTIF) return chip_.clock().wdt_read(rel - JAL_MGMT_WDT);
    switch (rel & 0xf000) {
    case JAL_MGMT_HOSTIF:
        return chip_.host().fw_read(rel - JAL_MGMT_HOSTIF);
    case JAL_MGMT_DMA:
        return rel == off_in(JAL_DMA_STATUS, 0) ? dma_status_ : 0;
    case JAL_MGMT_SLICE:
        return chip_.slices().read(rel - JAL_MGMT_SLICE, chip_.clock().now_us());
    case JAL_MGMT_HBM: {
        if (addr == JAL_HBM_TEMP_MC)
            return static_cast<std::uint32_t>(static_cast<int>(chip_.power().hbm_c() * 1000));
        // A result read stalls the core until the channel's stack engine is done.
        const std::uint64_t ready = chip_.phy().ready_ns(rel - JAL_MGMT_HBM);
        const std::uint64_t now = chip_.clock().now_ns();
        if (ready > now) chip_.clock().advance(ready - now);
        return chip_.phy().read(rel - JAL_MGMT_HBM);
    }
    case JAL_MGMT_POWER:
        // ECC totals come from the PHY's per-channel counts.
        if (addr == JAL_PWR_ECC_CORRECTED || addr == JAL_PWR_ECC_UNCORRECTED)
            return chip_.phy().ecc_total(addr == JAL_PWR_ECC_UNCORRECTED);
        chip_.step_models(chip_.clock().now_ns());
        return chip_.power().read(rel - JAL_MGMT_POWER);
    case JAL_MGMT_MMU:
        return chip_.mmu().fw_read(rel - JAL_MGMT_MMU);
    case JAL_MGMT_CP:
        return chip_.cp().fw_read(rel - JAL_MGMT_CP);
    case JAL_MGMT_FWU:
        return chip_.boot_rom().read(rel - JAL_MGMT_FWU);
    case JAL_MGMT_LINK:
        if (addr == JAL_LINK_SELF) return chip_.config().domain_chip;
        return chip_.links().fw_read(rel - JAL_MGMT_LINK);
    case JAL_MGMT_FAULT:
        return chip_.faults().read(rel - JAL_MGMT_FAULT);
    case JAL_MGMT_RLOG:
        return chip_.retained_log((rel - JAL_MGMT_RLOG) / 4);
    default:
        return 0;
    }
}

void PeripheralBus::write32(std::uint32_t addr, std::uint32_t value)
{
    chip_.clock().advance(JAL_MGMT_MMIO_NS);
    if (addr < JAL_MGMT_PERIPH_BASE || addr >= JAL_MGMT_PERIPH_BASE + JAL_MGMT_PERIPH_SIZE ||
        addr % 4) {
        log(LogLevel::warn, "chip{}: firmware write {:#x} to unmapped address {:#x}", chip_.index(),
            value, addr);
        return;
    }
    const std::uint32_t rel = addr - JAL_MGMT_PERIPH_BASE;
    if (rel < JAL_MGMT_WDT) return sys_write(rel, value);
    if (rel < JAL_MGMT_HOSTIF) return chip_.clock().wdt_write(rel - JAL_MGMT_WDT, value);
    switch (rel & 0xf000) {
    case JAL_MGMT_HOSTIF:
        chip_.host().fw_write(rel - JAL_MGMT_HOSTIF, value);
        return;
    case JAL_MGMT_DMA:
        dma_write(rel - JAL_MGMT_DMA, value);
        return;
    case JAL_MGMT_SLICE:
        chip_.slices().write(rel - JAL_MGMT_SLICE, value, chip_.clock().now_us());
        return;
    case JAL_MGMT_HBM:
        chip_.phy().write(rel - JAL_MGMT_HBM, value, chip_.clock().now_ns());
        return;
    case JAL_MGMT_POWER:
        chip_.power().write(rel - JAL_MGMT_POWER, value);
        return;
    case JAL_MGMT_MMU:
        chip_.mmu().fw_write(rel - JAL_MGMT_MMU, value);
        return;
    case JAL_MGMT_CP:
        chip_.cp().fw_write(rel - JAL_MGMT_CP, value);
        return;
    case JAL_MGMT_LINK:
        if (addr == JAL_LINK_CMD &&
            (value == JAL_LINK_CMD_TRAIN || value == JAL_LINK_CMD_TRAIN_LANES))
            chip_.clock().advance(std::uint64_t{JAL_LINK_TRAIN_US} * 1000);
        chip_.links().fw_write(rel - JAL_MGMT_LINK, value, [this](unsigned chip) {
            const auto& f = chip_.config().fabric;
            const fabric::Domain* d = chip_.domain();
            return (f && f->answers(chip)) || (d && d->reachable(chip));
        });
        return;
    case JAL_MGMT_FWU:
        // The FWU is its own DMA master: a chunk of up to 1 MiB is one command.
        chip_.boot_rom().write(
            rel - JAL_MGMT_FWU, value,
            [this](std::uint32_t fn, std::uint64_t addr, void* local, std::uint32_t len,
                   bool to_host) { return chip_.host().dma(fn, addr, local, len, to_host); });
        return;
    case JAL_MGMT_FAULT:
        chip_.faults().write(rel - JAL_MGMT_FAULT, value);
        return;
    case JAL_MGMT_RLOG:
        chip_.set_retained_log((rel - JAL_MGMT_RLOG) / 4, value);
        return;
    default:
        return;
    }
}

std::uint32_t PeripheralBus::sys_read(std::uint32_t off)
{
    auto& clock = chip_.clock();
    switch (off) {
    case off_in(JAL_SYS_ID, 0):
        return JAL_SYS_ID_MAGIC;
    case off_in(JAL_SYS_NOW_US_LO, 0): {
        const std::uint64_t now = clock.now_us();
        now_hi_latch_ = static_cast<std::uint32_t>(now >> 32);
        return static_cast<std::uint32_t>(now);
    }
    case off_in(JAL_SYS_NOW_US_HI, 0):
        return now_hi_latch_;
    case off_in(JAL_SYS_EVENTS, 0):
        return clock.events();
    case off_in(JAL_SYS_TICK_US, 0):
        return clock.tick_period_us();
    case off_in(JAL_SYS_RESET_CAUSE, 0):
        return chip_.reset_cause();
    case off_in(JAL_SYS_BOOT_COUNT, 0):
        return chip_.boot_count();
    case off_in(JAL_SYS_CHIP_INDEX, 0):
        return chip_.index();
    case off_in(JAL_SYS_FAULT_INJECT, 0):
        return 0;
    case off_in(JAL_SYS_WDT_RESETS, 0):
        return chip_.watchdog_resets();
    case off_in(JAL_SYS_RETAIN(0), 0):
    case off_in(JAL_SYS_RETAIN(1), 0):
    case off_in(JAL_SYS_RETAIN(2), 0):
    case off_in(JAL_SYS_RETAIN(3), 0):
        return chip_.retained((off - off_in(JAL_SYS_RETAIN(0), 0)) / 4);
    default:
        return 0;
    }
}

void PeripheralBus::sys_write(std::uint32_t off, std::uint32_t value)
{
    auto& clock = chip_.clock();
    switch (off) {
    case off_in(JAL_SYS_EVENTS_CLEAR, 0):
        clock.clear_events(value);
        break;
    case off_in(JAL_SYS_TICK_US, 0):
        clock.set_tick_period_us(value);
        break;
    case off_in(JAL_SYS_CONSOLE, 0):
        console_byte(static_cast<char>(value & 0xff));
        break;
    case off_in(JAL_SYS_RESET_REQ, 0):
        if (value == JAL_RESET_MAGIC) throw CoreReset{JAL_RESET_CAUSE_HOST};
        break;
    case off_in(JAL_SYS_RETAIN(0), 0):
    case off_in(JAL_SYS_RETAIN(1), 0):
    case off_in(JAL_SYS_RETAIN(2), 0):
    case off_in(JAL_SYS_RETAIN(3), 0):
        chip_.set_retained((off - off_in(JAL_SYS_RETAIN(0), 0)) / 4, value);
        break;
    default:
        break;
    }
}

void PeripheralBus::dma_write(std::uint32_t off, std::uint32_t value)
{
    switch (off) {
    case off_in(JAL_DMA_HOST_LO, JAL_MGMT_DMA):
        dma_host_ = (dma_host_ & ~0xffffffffull) | value;
        break;
    case off_in(JAL_DMA_HOST_HI, JAL_MGMT_DMA):
        dma_host_ = (dma_host_ & 0xffffffffull) | (std::uint64_t{value} << 32);
        break;
    case off_in(JAL_DMA_LOCAL, JAL_MGMT_DMA):
        dma_local_ = value;
        break;
    case off_in(JAL_DMA_LEN, JAL_MGMT_DMA):
        dma_len_ = value;
        break;
    case off_in(JAL_DMA_FUNC, JAL_MGMT_DMA):
        dma_fn_ = value;
        break;
    case off_in(JAL_DMA_CTRL, JAL_MGMT_DMA): {
        if (!(value & JAL_DMA_GO)) break;
        const bool to_host = value & JAL_DMA_TO_HOST;
        if (!local_memory || dma_len_ == 0 || dma_len_ > JAL_DMA_LEN_MAX) {
            dma_status_ = local_memory ? JAL_STATUS_INVALID_LENGTH : JAL_STATUS_UNSUPPORTED;
            break;
        }
        std::array<std::byte, JAL_DMA_LEN_MAX> buf;
        if (to_host && !local_memory(dma_local_, buf.data(), dma_len_, false)) {
            dma_status_ = JAL_STATUS_OUT_OF_RANGE;
            break;
        }
        dma_status_ = chip_.host().dma(dma_fn_, dma_host_, buf.data(), dma_len_, to_host);
        if (dma_status_ == JAL_STATUS_OK && !to_host &&
            !local_memory(dma_local_, buf.data(), dma_len_, true))
            dma_status_ = JAL_STATUS_OUT_OF_RANGE;
        break;
    }
    default:
        break;
    }
}

std::uint32_t PeripheralBus::dma_direct(std::uint32_t fn, std::uint64_t host_addr, void* local,
                                        std::uint32_t len, bool to_host)
{
    chip_.clock().advance(JAL_MGMT_MMIO_NS * 6);  // the register writes it stands for
    if (len == 0 || len > JAL_DMA_LEN_MAX) return dma_status_ = JAL_STATUS_INVALID_LENGTH;
    return dma_status_ = chip_.host().dma(fn, host_addr, local, len, to_host);
}

void PeripheralBus::console_byte(char c)
{
    if (c == '\n' || console_line_.size() >= kMaxConsoleLine) {
        log(LogLevel::info, "chip{} fw {:>9.3f} ms: {}", chip_.index(),
            chip_.clock().now_us() / 1000.0, console_line_);
        if (const ChipTrace& t = chip_.trace())
            t.writer->instant(wall_pid(t.chip), kFirmwareTid, console_line_, "firmware",
                              t.writer->wall_us(), {{"firmware_us", chip_.clock().now_us()}});
        console_line_.clear();
        if (c == '\n') return;
    }
    if (c != '\r') console_line_.push_back(c);
}

}  // namespace jal::emu
