// Tile descriptors (TDESC) and their byte layout in a slice's L1: which formats exist,
// how many bytes a row takes, and the checks every tile operand goes through.
#pragma once

#include "jal/hw/isa.h"
#include "jal/hw/status.h"

#include <cstdint>

namespace jal::emu::exec {

// A half-open byte range of L1 [lo, hi): what the timing model tracks hazards on.
struct L1Range {
    std::uint32_t lo = 0, hi = 0;
    bool empty() const { return hi <= lo; }
    bool overlaps(const L1Range& o) const { return lo < o.hi && o.lo < hi; }
};

struct Tile {
    std::uint32_t addr = 0, rows = 0, cols = 0, stride = 0;  // stride: bytes between rows
    std::uint32_t dtype = 0;                                 // 0: never described
    bool valid() const { return dtype != 0; }
    std::uint64_t elements() const { return std::uint64_t{rows} * cols; }
    // L1 bytes the tile spans: first row's start to last row's end.
    L1Range span() const;
    bool same_shape(const Tile& o) const { return rows == o.rows && cols == o.cols; }
};

bool dtype_known(std::uint32_t dt);
bool dtype_blocked(std::uint32_t dt);  // MX and Q8_0: 32-element blocks along a row
// Bytes of one row of `cols` elements (blocked formats: cols a multiple of 32).
std::uint64_t row_bytes(std::uint32_t dt, std::uint64_t cols);

// Builds a descriptor from TDESC's operands; OK, INVALID_FIELD (dtype, zero size, block
// multiple, stride shorter than a row) or OUT_OF_RANGE (outside L1 or the code object's
// l1_bytes; `bad_addr` gets the offending L1 offset).
std::uint32_t make_tile(std::uint64_t addr, std::uint64_t rows, std::uint64_t cols,
                        std::uint32_t imm, std::uint32_t l1_limit, Tile& out,
                        std::uint64_t& bad_addr);

}  // namespace jal::emu::exec
