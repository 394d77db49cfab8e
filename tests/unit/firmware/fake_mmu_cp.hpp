// Fake MMU (JAL_MGMT_MMU) and command-processor queue engines (JAL_MGMT_CP) for firmware
// unit tests. They plug into a FakeBus through its read/write hooks (install()), so the
// shared fake bus needs no knowledge of them.
//
// MMU: a map (context, virtual page) -> replicas' physical addresses. MAP replaces the
// mapping (or, with JAL_MMU_F_ADD_REPLICA, appends a replica); UNMAP drops it; LOOKUP puts
// replica FLAGS in PA (PAGE_FAULT if absent); FLUSH_CTX drops a context. STATUS holds the
// result; misaligned or out-of-range addresses are INVALID_FIELD. fail_map_after makes the
// n-th following MAP fail with INTERNAL. SCRUB records the page (and whether any context
// still mapped it then); fail_scrub makes every SCRUB fail with INTERNAL. Peer memory
// (1.8): EXPORT records the slot's pages and answers key slot+1 and chip 7, REVOKE records
// the slot, MAP_REMOTE maps a marker page (chip << 48 | slot << 20 | page) if the key is
// slot+1. `commands` lists every command, in order.
// CP: one register set per queue id behind QSEL; CTRL ENABLE/DISABLE/RESET set the state
// the way the header describes; tests poke the read-only counters directly. Host-window
// commands (1.11) are recorded in `window_cmds` and answered with `window_status`.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "fake_bus.hpp"
#include "jal/hw/pci.h"
#include "jal/hw/queue.h"

namespace fake {

struct FakeMmu {
    std::map<std::pair<std::uint32_t, std::uint64_t>, std::vector<std::uint64_t>>
        maps;  // (ctx, va page)
    std::uint32_t ctx = 0, va_lo = 0, va_hi = 0, pa_lo = 0, pa_hi = 0, flags = 0, status = 0;
    std::uint32_t maps_done = 0, unmaps = 0, lookups = 0;
    std::vector<std::uint32_t> flushes;   // contexts flushed, in order
    int fail_map_after = -1;              // MAPs that still succeed before one fails; -1: never
    std::vector<std::uint64_t> scrubbed;  // physical pages, in order
    std::uint32_t scrubbed_while_mapped = 0;
    bool fail_scrub = false;
    std::uint32_t chip = 0, slot = 0, key_lo = 0, key_hi = 0;
    std::vector<std::uint32_t> commands;              // every CMD written, in order
    std::map<std::uint32_t, std::uint32_t> exported;  // slot -> pages
    std::vector<std::uint32_t> revoked;               // slots, in order

    bool read(std::uint32_t addr, std::uint32_t& v) const;
    void write(std::uint32_t addr, std::uint32_t v);
    void execute(std::uint32_t cmd);  // a write of CMD
    // EXPORT, REVOKE, MAP_REMOTE (false for any other command).
    bool execute_peer(std::uint32_t cmd, std::pair<std::uint32_t, std::uint64_t> key);
    // Mappings (virtual pages) of a context.
    std::size_t mapped_pages(std::uint32_t context) const;
    const std::vector<std::uint64_t>* replicas(std::uint32_t context, std::uint64_t va) const;

private:
    // Drops a mapping (false: none). Keeps mapped_ in step with maps.
    bool drop(std::pair<std::uint32_t, std::uint64_t> key);
    // Physical page -> how many mappings name it, so SCRUB's check does not scan every
    // mapping (the fuzzer allocates tens of thousands of pages).
    std::map<std::uint64_t, std::uint32_t> mapped_;
};

struct FakeCpQueue {
    std::uint32_t ctx = 0, func = 0, ring_lo = 0, ring_hi = 0, size = 0, rptr_lo = 0, rptr_hi = 0,
                  vector = 0, space = 0;
    std::uint32_t state = JAL_QUEUE_DISABLED, last_error = 0, errors = 0;
    std::uint64_t read_index = 0, write_index = 0, err_index = 0;
    std::vector<std::uint32_t> ctrl;  // CTRL writes, in order
};

struct FakeWindowCmd {
    std::uint32_t cmd, fn, space;
    std::uint64_t base, size;
    bool operator==(const FakeWindowCmd&) const = default;
};

struct FakeCp {
    std::array<FakeCpQueue, JAL_MAX_USER_QUEUES> q{};
    std::uint32_t qsel = 0;
    std::uint32_t latch_hi = 0;
    FakeWindowCmd window{};  // the WIN_* registers
    std::vector<FakeWindowCmd> window_cmds;
    std::uint32_t window_status = 0;

    bool read(std::uint32_t addr, std::uint32_t& v);
    void write(std::uint32_t addr, std::uint32_t v);
};

struct FakeMmuCp {
    FakeMmu mmu;
    FakeCp cp;
    // Routes the bus's accesses to the MMU and CP blocks here.
    void install(FakeBus& bus);
};

}  // namespace fake
