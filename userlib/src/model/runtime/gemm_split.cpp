#include "gemm_split.hpp"

#include <algorithm>

namespace jal::model::detail {

double gemm_slice_bytes(uint32_t m, uint64_t x_row_bytes, uint64_t shard_bytes, uint32_t groups,
                        uint32_t m_chunk, uint32_t local_block)
{
    const uint32_t rows = (m + groups - 1) / groups;
    const uint32_t chunks = (rows + std::max(m_chunk, 1u) - 1) / std::max(m_chunk, 1u);
    // Of the column group's shards, those of the slice's block of local_block are local.
    const uint32_t local = groups > 1 ? std::min(local_block, groups) : 0;
    const double w = double(groups - local + local / 4.0) * double(shard_bytes) * chunks;
    return double(rows) * double(x_row_bytes) + w;
}

uint32_t gemm_row_groups(uint32_t m, uint32_t slices, uint64_t x_row_bytes, uint64_t shard_bytes,
                         const MChunk& m_chunk, uint32_t local_block)
{
    uint32_t best = 1;
    double least = gemm_slice_bytes(m, x_row_bytes, shard_bytes, 1, m_chunk(1));
    for (uint32_t a = 2; a <= slices && a <= m; a *= 2) {
        if (slices % a) break;
        const double bytes =
            gemm_slice_bytes(m, x_row_bytes, shard_bytes, a, m_chunk(a), local_block);
        if (bytes < least) best = a, least = bytes;
    }
    return best;
}

}  // namespace jal::model::detail
