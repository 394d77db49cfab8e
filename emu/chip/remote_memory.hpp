// A chip reaching another chip's HBM through its fabric ports: the bytes travel over the
// domain (libfabric RMA to the chip's process) or, for a chip of the same process (a tray),
// by a copy; the time is the link model's (ChipLinks),
// and a peer that is gone marks the links to it down. What the console's rpeek/rpoke use;
// the path DMA and tile programs will take.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace jal::emu {

class Chip;

struct RemoteAccess {
    unsigned port = 0;  // index into chip.links().ports(): the (first) port it took
    std::uint64_t start_ns = 0, end_ns = 0;
    unsigned ports = 1;  // the switch planes it was striped over
};

// Writes `data` to (or reads it from) chip `target`'s device address `addr`. Throws
// std::runtime_error saying why not: no domain or tray, no link up to the chip, the peer
// gone.
RemoteAccess remote_write(Chip& chip, unsigned target, std::uint64_t addr,
                          std::span<const std::byte> data);
RemoteAccess remote_read(Chip& chip, unsigned target, std::uint64_t addr,
                         std::span<std::byte> data);

}  // namespace jal::emu
