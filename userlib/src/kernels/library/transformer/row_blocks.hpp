// row_blocks.hpp: the code every row-wise transformer kernel starts with: which rows are
// this slice's, and a loop over them in blocks that fit L1.
//
// Rows are split into one contiguous range per slice (slice s of n gets rows
// [s*ceil(rows/n), (s+1)*ceil(rows/n)) clipped to rows), so a caller that wants every
// slice to read local HBM places each slice's range of rows on that slice.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <jal/kernels/builder.hpp>

namespace jal::kernels::transformer_detail {

struct RowRange {
    X begin;
    X end;
};

// Emits the computation of this slice's [begin, end) of `rows`; the caller frees both.
RowRange slice_rows(Builder& b, X rows);

// for (row0 = begin; row0 < end; row0 += block) body(row0, n = min(block, end - row0)).
// row0 and n are allocated and freed by the loop.
void for_blocks(Builder& b, X begin, X end, uint32_t block,
                const std::function<void(X row0, X n)>& body);

// for_blocks over this slice's rows (slice_rows) of `rows`: the loop every row-wise
// kernel runs.
void for_slice_blocks(Builder& b, X rows, uint32_t block,
                      const std::function<void(X row0, X n)>& body);

// addr = base + row0 * stride: where a block of rows starting at row0 begins.
void row_address(Builder& b, X addr, X row0, X base, X stride);

// Loads (tile t, already described) the rows at row0 of the tensor at base and waits.
void load_rows(Builder& b, T t, X addr, X row0, X base, X stride, Q q);

// Stores tile t to the rows at row0 of the tensor at base and waits; addr is scratch.
void store_rows(Builder& b, T t, X addr, X row0, X base, X stride, Q q);

// Traps with OUT_OF_RANGE unless first + count <= limit (unsigned).
void trap_unless_within(Builder& b, X first, X count, uint32_t limit);

// Emits for (i = first; i < end; i += step) body(i) with a step held in a register (the
// builder's for_range takes an immediate step). i is allocated and freed here.
void for_strided(Builder& b, X first, X end, X step, const std::function<void(X i)>& body);

// A new register holding `value`.
X constant(Builder& b, int64_t value);

// d = base + index * scale (scale a byte count known when the kernel is built).
void scaled_add(Builder& b, X d, X base, X index, int64_t scale);

// The most rows (at most `max_rows`, at least 1) whose `bytes_per_row` fit in `budget`.
uint32_t rows_that_fit(uint64_t bytes_per_row, uint64_t budget, uint32_t max_rows);

// The bits of an F32 as the low word of an integer (VCLAMP bounds, TWRITE values).
int64_t f32_bits(float value);

// Throws jal::Error(INVALID_FIELD) naming the kernel when `ok` is false.
void require(bool ok, const std::string& kernel, const std::string& what);

// The check every row kernel of `cols` F32 columns makes first: cols > 0 (as require).
void require_cols(uint32_t cols, const std::string& kernel);

// L1 budget for one kernel's tiles: half of a slice's L1, leaving room for double
// buffering later without changing block sizes.
inline constexpr uint64_t kL1Budget = JAL_SLICE_L1_BYTES / 2;

}  // namespace jal::kernels::transformer_detail
