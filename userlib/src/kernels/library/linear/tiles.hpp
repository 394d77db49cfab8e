// Tile-level instruction sequences the linear generators share: describing a tile at a
// fixed L1 offset, the rows of block j of a slice's share and the common epilogue.
#pragma once

#include <cstdint>

#include <jal/kernels/builder.hpp>

namespace jal::kernels::linear::detail {

// Describes tile t at L1 offset l1 (through a scratch register) with rows x cols of dt.
void emit_tdesc_at(Builder& b, T t, uint32_t l1, X rows, X cols, jal_dtype dt,
                   uint32_t stride_bytes = 0);

// d = ceil(count / unit), unit_reg holding unit.
void emit_ceil_div(Builder& b, X d, X count, X unit_reg, uint32_t unit);

// `count` items in blocks of `unit`: a register holding unit, and one holding the number
// of blocks, ceil(count / unit) (both new, in that order).
struct Blocks {
    X unit;
    X count;
};
Blocks emit_blocks(Builder& b, X count, uint32_t unit);

// A label a slice with nothing to do (count 0) jumps to at once; emit_finish binds it.
Label emit_skip_if_empty(Builder& b, X count);

// A new register holding min(unit, count − j·unit): the rows (or columns) of block j.
X emit_block_size(Builder& b, X j, X count, X unit_reg);

// A new register holding base + j·unit·stride: the first row of block j.
X emit_block_addr(Builder& b, X j, X unit_reg, X stride, X base);

// A new register holding base + j·unit·element_bytes: element j·unit of a packed row.
X emit_block_elem_addr(Builder& b, X j, X unit_reg, int32_t element_bytes, X base);

// The end of a kernel whose slices may have nothing to do: bind `done` (where an idle
// slice jumps), end, and encode. The kernel's stores are not waited for: a slice ends
// when its last op completes, and in a staged program STAGE waits for them, so what
// follows (the next stage's argument reads, docs/tile-isa.md "Stages") overlaps their
// landing.
CodeObject emit_finish(Builder& b, Label done);

}  // namespace jal::kernels::linear::detail
