// The input format of fuzz-tile-exec: any bytes make a valid tile-ISA program whose control
// flow and addresses never depend on data, so the functional model and the timing-only
// model (which computes no data) must run it the same way.
//
// Input: 4 setup bytes (slices, instruction budget, two reserved), then 8 bytes per
// instruction, read as an instruction word and made valid field by field: an unknown
// opcode becomes a known one, register fields and immediates are brought into the range of
// their role, branch targets into the program. Words that are valid already stay as they
// are, except that:
//  * x28..x31 are sinks: loads (LD, LW) and TREAD write only there, and nothing reads them,
//    because a timing-only run loads what was never stored (ST and TSTORE write nothing)
//    and TREAD reads 0;
//  * TGATHER's table stride register is x0, so its addresses do not depend on the indices;
//  * MOVSR never reads JAL_SR_TIMING_ONLY.
// A prologue sets x1..x8 to useful values (kPrologue below) and END follows the program.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "jal/hw/admin.h"

namespace jal::fuzz {

inline constexpr uint64_t kTileVa = JAL_VA_BASE;  // 4 mapped pages of 2 MiB from here
inline constexpr unsigned kTilePages = 4;
inline constexpr unsigned kFirstSink = 28;
// The programs' l1_bytes (tiles must lie below it) and the most instructions a slice may
// run: together they bound an input's work (a vector op over all of L1 in a loop of the
// whole budget), which the instruction budget alone does not.
inline constexpr uint32_t kTileL1Bytes = 256u << 10;
inline constexpr uint64_t kMaxTileBudget = 256 + 255 * 16;

struct TileProgram {
    uint32_t slices = 1;
    uint64_t budget = 0;          // instructions per slice
    std::vector<uint64_t> code;   // prologue, the input's instructions, END
    uint32_t first_input_pc = 0;  // where the input's instructions start
};

// What the prologue puts in x1..x8 (documented for writing seeds).
//   x1 kTileVa (the argument buffer), x2 kTileVa + 2 MiB, x3 8, x4 32, x5 64 (an L1
//   offset), x6 65536 (an L1 offset), x7 1, x8 4096.
TileProgram make_tile_program(std::span<const uint8_t> input);

// The input whose program is `words` (valid words are kept), for seeds.
std::vector<uint8_t> tile_program_input(uint32_t slices, uint32_t budget,
                                        std::span<const uint64_t> words);

}  // namespace jal::fuzz
