#include "gemm_split.hpp"

namespace jal::model::detail {

double gemm_slice_bytes(uint32_t m, uint64_t x_row_bytes, uint64_t shard_bytes, uint32_t groups)
{
    const uint32_t rows = (m + groups - 1) / groups;
    return double(rows) * double(x_row_bytes) + double(groups) * double(shard_bytes);
}

uint32_t gemm_row_groups(uint32_t m, uint32_t slices, uint64_t x_row_bytes, uint64_t shard_bytes)
{
    uint32_t best = 1;
    for (uint32_t a = 2; a <= slices && a <= m; a *= 2) {
        if (slices % a) break;
        if (gemm_slice_bytes(m, x_row_bytes, shard_bytes, a) <
            gemm_slice_bytes(m, x_row_bytes, shard_bytes, best))
            best = a;
    }
    return best;
}

}  // namespace jal::model::detail
