// How many row groups a dense GEMM runs in (GemmConfig::row_groups, docs/model-runtime.md,
// "Prefill"): in one group every slice reads all M rows of x and its own shard of W; in a
// groups it reads M/a rows and a shards. The runtime takes the a (a power of two dividing
// the slice count, at most M) for which a slice reads the fewest bytes: one group for a
// decode step's few rows, several for a prompt's thousand.
#pragma once

#include <cstdint>

namespace jal::model::detail {

// Bytes one slice reads: m rows of x_row_bytes over `groups`, `groups` shards.
double gemm_slice_bytes(uint32_t m, uint64_t x_row_bytes, uint64_t shard_bytes, uint32_t groups);

uint32_t gemm_row_groups(uint32_t m, uint32_t slices, uint64_t x_row_bytes, uint64_t shard_bytes);

}  // namespace jal::model::detail
