// How many row groups a dense GEMM runs in (GemmConfig::row_groups, docs/model-runtime.md,
// "The graph"): in one group every slice reads all M rows of x and its own shard of W; in a
// groups it reads M/a rows and a shards, the shards once per chunk of rows L1 holds. The
// runtime takes the a (a power of two dividing the slice count, at most M) for which a
// slice reads the fewest bytes: one group for a decode step's few rows, several for a
// prompt's thousand.
#pragma once

#include <cstdint>
#include <functional>

namespace jal::model::detail {

// Rows of x the kernel keeps in L1 at once with `groups` row groups (plan_gemm's m_chunk).
using MChunk = std::function<uint32_t(uint32_t groups)>;

// Bytes one slice reads: m rows of x_row_bytes over `groups`, and `groups` shards once per
// chunk of m_chunk rows. With local copies of the shards of aligned blocks of `local_block`
// slices (the runtime's dense copies; powers of two, as the groups), the shards of the
// column group in the slice's block come from local HBM at four times the remote rate (240
// against 60 GB/s): they count a quarter.
double gemm_slice_bytes(uint32_t m, uint64_t x_row_bytes, uint64_t shard_bytes, uint32_t groups,
                        uint32_t m_chunk, uint32_t local_block = 0);

uint32_t gemm_row_groups(uint32_t m, uint32_t slices, uint64_t x_row_bytes, uint64_t shard_bytes,
                         const MChunk& m_chunk, uint32_t local_block = 0);

}  // namespace jal::model::detail
