// The MMU block (jal/hw/mgmt.h, JAL_MGMT_MMU): per-context translation of device virtual
// addresses to HBM pages. Each command is CTX, VA, PA, FLAGS, then CMD; STATUS holds its
// jal_status once the CMD write returns.
#pragma once

#include <cstdint>

#include "firmware/hal/hal.hpp"
#include "jal/hw/mgmt.h"

namespace jal::fw::memory::mmu {

inline std::uint32_t command(std::uint32_t ctx, std::uint64_t va, std::uint64_t pa,
                             std::uint32_t flags, std::uint32_t cmd)
{
    hal::write32(JAL_MMU_CTX, ctx);
    hal::write32(JAL_MMU_VA_LO, static_cast<std::uint32_t>(va));
    hal::write32(JAL_MMU_VA_HI, static_cast<std::uint32_t>(va >> 32));
    hal::write32(JAL_MMU_PA_LO, static_cast<std::uint32_t>(pa));
    hal::write32(JAL_MMU_PA_HI, static_cast<std::uint32_t>(pa >> 32));
    hal::write32(JAL_MMU_FLAGS, flags);
    hal::write32(JAL_MMU_CMD, cmd);
    return hal::read32(JAL_MMU_STATUS);
}

// Maps va to pa; with add_replica, adds pa as one more copy of an existing mapping.
inline std::uint32_t map(std::uint32_t ctx, std::uint64_t va, std::uint64_t pa, bool add_replica)
{
    return command(ctx, va, pa, add_replica ? JAL_MMU_F_ADD_REPLICA : 0u, JAL_MMU_CMD_MAP);
}

// Drops va and all its replicas.
inline std::uint32_t unmap(std::uint32_t ctx, std::uint64_t va)
{
    return command(ctx, va, 0, 0, JAL_MMU_CMD_UNMAP);
}

// The physical page of replica `replica` of va; JAL_STATUS_PAGE_FAULT when there is none.
inline std::uint32_t lookup(std::uint32_t ctx, std::uint64_t va, std::uint32_t replica,
                            std::uint64_t& pa)
{
    const std::uint32_t status = command(ctx, va, 0, replica, JAL_MMU_CMD_LOOKUP);
    if (status != 0) return status;
    const std::uint32_t lo = hal::read32(JAL_MMU_PA_LO);
    const std::uint32_t hi = hal::read32(JAL_MMU_PA_HI);
    pa = std::uint64_t{hi} << 32 | lo;
    return status;
}

// Zeroes the physical page at pa; the core stalls until it is written.
inline std::uint32_t scrub(std::uint64_t pa)
{
    return command(0, 0, pa, 0, JAL_MMU_CMD_SCRUB);
}

// Drops every mapping of the context.
inline std::uint32_t flush_ctx(std::uint32_t ctx)
{
    return command(ctx, 0, 0, 0, JAL_MMU_CMD_FLUSH_CTX);
}

// ---- peer memory (interface 1.8) ----

inline void set_peer(std::uint32_t chip, std::uint32_t slot, std::uint64_t key)
{
    hal::write32(JAL_MMU_CHIP, chip);
    hal::write32(JAL_MMU_SLOT, slot);
    hal::write32(JAL_MMU_KEY_LO, static_cast<std::uint32_t>(key));
    hal::write32(JAL_MMU_KEY_HI, static_cast<std::uint32_t>(key >> 32));
}

// Publishes `pages` pages of ctx from va in export slot `slot`: the MMU draws the key and
// reports this chip's domain id.
inline std::uint32_t export_pages(std::uint32_t ctx, std::uint64_t va, std::uint32_t pages,
                                  std::uint32_t slot, std::uint64_t& key, std::uint32_t& chip)
{
    set_peer(0, slot, 0);
    const std::uint32_t status = command(ctx, va, 0, pages, JAL_MMU_CMD_EXPORT);
    if (status != 0) return status;
    key = std::uint64_t{hal::read32(JAL_MMU_KEY_HI)} << 32 | hal::read32(JAL_MMU_KEY_LO);
    chip = hal::read32(JAL_MMU_CHIP);
    return status;
}

// Clears export slot `slot`: every importer's next access to it fails.
inline std::uint32_t revoke(std::uint32_t slot)
{
    set_peer(0, slot, 0);
    return command(0, 0, 0, 0, JAL_MMU_CMD_REVOKE);
}

// Maps va of ctx to page `page` of export `slot` of chip `chip`, checked against `key`.
inline std::uint32_t map_remote(std::uint32_t ctx, std::uint64_t va, std::uint32_t chip,
                                std::uint32_t slot, std::uint32_t page, std::uint64_t key)
{
    set_peer(chip, slot, key);
    return command(ctx, va, 0, page, JAL_MMU_CMD_MAP_REMOTE);
}

}  // namespace jal::fw::memory::mmu
