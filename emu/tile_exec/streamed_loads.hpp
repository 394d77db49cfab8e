// Streamed loads (ISA 1.5, docs/tile-isa.md "Streamed loads"): the program promises that
// the device memory a streamed TLOAD or TGATHER reads does not change while the tile is in
// use, so the device may read it at any time until the tile is read. The emulator records
// such a load (a gather: each run of consecutive rows) instead of copying it into L1: an MMA
// whose b lies inside one reads the weights where they lie in HBM (read once, in order,
// instead of copied and read again); any other read of the tile's L1 bytes first copies in
// the rows it touches, and a packed write over them ends the load. A slice's own list, used
// only by the thread running the slice: nothing here is shared.
#pragma once

#include "emu/tile_exec/device_memory.hpp"
#include "emu/tile_exec/tile.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace jal::emu::exec {

struct StreamedLoad {
    L1Range span;  // the tile's L1 bytes
    std::uint32_t l1_addr = 0, rows = 0, l1_stride = 0;
    std::uint64_t row_bytes = 0;
    std::uint64_t va = 0, src_stride = 0;  // row 0's device address, and the rows' stride there
};

// Where an MMA's b lies in device memory: the rows of a recorded load it covers.
struct StreamedSource {
    std::uint64_t va = 0, stride = 0;
};

class StreamedLoads {
public:
    bool empty() const { return loads_.empty(); }
    // Whether some load overlaps r: first a bit per 64 KiB of L1 that some load touches
    // (most tiles an op names lie apart from the weights in flight), then the loads.
    bool may_overlap(L1Range r) const
    {
        if (!(granules_ & granule_mask(r))) return false;
        for (const StreamedLoad& l : loads_)
            if (l.span.overlaps(r)) return true;
        return false;
    }
    void add(const StreamedLoad& l);
    // The rows of loads that overlap r are copied in from device memory; the rows before and
    // after them stay recorded as loads of their own. A jal_status: a row whose pages are no
    // longer mapped (or now poisoned) fails the access with the read's status at `fault_va`.
    // `mem`: the caller's access to device memory, or null: one of `memory` is taken.
    std::uint32_t copy_in(L1Range r, std::byte* l1, DeviceMemory::Access* mem,
                          const DeviceMemory& memory, std::uint32_t slice, std::uint64_t& fault_va);
    // r is about to be written: a load with a row r overlaps is over (its tile's bytes that r
    // does not cover are undefined from now on: docs/tile-isa.md, "Streamed loads").
    void drop(L1Range r);
    // Whether tile t (rows of row_bytes) lies inside one load at its row stride: where its
    // first row lies in device memory and the stride of its rows there.
    bool inside(const Tile& t, std::uint64_t row_bytes, StreamedSource& src) const;

private:
    static std::uint64_t granule_mask(L1Range r)
    {
        constexpr std::uint32_t kShift = 16;  // 64 KiB granules: 64 of them in L1
        if (r.empty()) return 0;
        const std::uint32_t a = std::min(r.lo >> kShift, 63u);
        const std::uint32_t b = std::min((r.hi - 1) >> kShift, 63u);
        const std::uint64_t upto_b = b == 63 ? ~std::uint64_t{0} : (std::uint64_t{2} << b) - 1;
        return upto_b & ~((std::uint64_t{1} << a) - 1);
    }
    struct Rows {
        std::uint32_t first, last;
    };
    static Rows rows_in(const StreamedLoad& l, L1Range r);
    void regranule();
    StreamedLoad piece(const StreamedLoad& l, std::uint32_t a, std::uint32_t b) const;
    std::vector<StreamedLoad> loads_;
    std::uint64_t granules_ = 0;
};

}  // namespace jal::emu::exec
