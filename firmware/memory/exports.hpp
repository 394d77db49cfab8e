// Exports of device memory to peer chips (interface 1.8; docs/fabric.md, "Peer memory"):
// which pages of which context each slot of the MMU's export table publishes. The table
// itself (keys and physical pages) is the MMU's, in HBM where importers read it; this is
// the firmware's record of what to revoke when the memory goes. 4 KiB of SRAM.
#pragma once

#include <array>
#include <cstdint>

#include "jal/hw/admin.h"

namespace jal::fw::memory {

class Exports {
public:
    // Revokes every slot (a new boot: no export survives it).
    void init();
    // Publishes pages [va_page, va_page + pages) of ctx in a free slot. BUSY when every slot
    // is taken; the MMU's status otherwise.
    [[nodiscard]] std::uint32_t add(std::uint32_t ctx, std::uint32_t va_page, std::uint32_t pages,
                                    jal_mem_export_reply& out);
    // Revokes every export of ctx that overlaps [va_page, va_page + pages) (all of them with
    // pages = ~0u from 0). Called before the pages are unmapped and scrubbed, so no importer
    // reaches them once they can belong to someone else. Returns the slots revoked.
    std::uint32_t revoke(std::uint32_t ctx, std::uint32_t va_page, std::uint32_t pages);
    // Revokes slot `slot` if ctx holds it.
    void drop(std::uint32_t ctx, std::uint32_t slot);
    std::uint32_t live() const;

private:
    struct Slot {
        std::uint32_t va_page = 0;
        std::uint16_t pages = 0;
        std::uint8_t ctx = 0;  // 0: free
        std::uint8_t reserved = 0;
    };
    static_assert(sizeof(Slot) == 8);
    std::array<Slot, JAL_MAX_EXPORTS> slots_{};
};

}  // namespace jal::fw::memory
