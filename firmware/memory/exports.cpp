#include "firmware/memory/exports.hpp"

#include "firmware/memory/mmu.hpp"
#include "jal/hw/status.h"

namespace jal::fw::memory {

void Exports::init()
{
    for (std::uint32_t s = 0; s < JAL_MAX_EXPORTS; ++s) {
        (void)mmu::revoke(s);
        slots_[s] = Slot{};
    }
}

std::uint32_t Exports::add(std::uint32_t ctx, std::uint32_t va_page, std::uint32_t pages,
                           jal_mem_export_reply& out)
{
    if (pages == 0 || pages > JAL_EXPORT_MAX_PAGES) return JAL_STATUS_INVALID_LENGTH;
    for (std::uint32_t s = 0; s < JAL_MAX_EXPORTS; ++s) {
        if (slots_[s].ctx != 0) continue;
        const std::uint64_t va = JAL_VA_BASE + std::uint64_t{va_page} * JAL_PAGE_SIZE;
        std::uint64_t key = 0;
        std::uint32_t chip = 0;
        const std::uint32_t status = mmu::export_pages(ctx, va, pages, s, key, chip);
        if (status != JAL_STATUS_OK) return status;
        slots_[s] =
            Slot{va_page, static_cast<std::uint16_t>(pages), static_cast<std::uint8_t>(ctx), 0};
        out = jal_mem_export_reply{};
        out.key = key;
        out.handle = s;
        out.chip = chip;
        out.va = va;
        out.size = std::uint64_t{pages} * JAL_PAGE_SIZE;
        out.pages = pages;
        return JAL_STATUS_OK;
    }
    return JAL_STATUS_BUSY;
}

std::uint32_t Exports::revoke(std::uint32_t ctx, std::uint32_t va_page, std::uint32_t pages)
{
    std::uint32_t n = 0;
    const std::uint64_t end = std::uint64_t{va_page} + pages;
    for (std::uint32_t s = 0; s < JAL_MAX_EXPORTS; ++s) {
        const Slot& e = slots_[s];
        if (e.ctx != ctx || e.va_page >= end || std::uint64_t{e.va_page} + e.pages <= va_page)
            continue;
        (void)mmu::revoke(s);
        slots_[s] = Slot{};
        ++n;
    }
    return n;
}

void Exports::drop(std::uint32_t ctx, std::uint32_t slot)
{
    if (slot >= JAL_MAX_EXPORTS || ctx == 0 || slots_[slot].ctx != ctx) return;
    (void)mmu::revoke(slot);
    slots_[slot] = Slot{};
}

std::uint32_t Exports::live() const
{
    std::uint32_t n = 0;
    for (const Slot& e : slots_) n += e.ctx != 0;
    return n;
}

}  // namespace jal::fw::memory
