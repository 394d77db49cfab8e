// kv_cache.cpp: allocation and head table of a layer's KV cache (kv_cache.hpp).
#include <jal/kernels/library/kv_cache.hpp>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include <jal/error.hpp>

namespace jal::kernels {

std::vector<uint64_t> kv_head_masks(uint64_t dispatch_mask, uint32_t n_head_kv, uint32_t key_splits)
{
    const uint32_t n = static_cast<uint32_t>(std::popcount(dispatch_mask));
    if (n == 0 || n_head_kv == 0)
        throw Error(JAL_STATUS_INVALID_FIELD, "kv_head_masks: an empty dispatch mask or no heads");
    const uint32_t splits = std::max(key_splits, 1u);
    std::vector<uint32_t> logical;  // dispatch slice index -> logical slice
    for (uint32_t slice = 0; slice < 64; slice++)
        if (dispatch_mask >> slice & 1) logical.push_back(slice);
    // Items repeat their (slice, head) pairing every n * splits * n_head_kv items.
    std::vector<uint64_t> masks(n_head_kv, 0);
    const uint64_t period = uint64_t{n} * splits * n_head_kv;
    for (uint64_t item = 0; item < period; item++)
        masks[(item / splits) % n_head_kv] |= uint64_t{1} << logical[item % n];
    return masks;
}

uint64_t kv_head_bytes(uint32_t n_ctx, uint32_t head_dim, jal_dtype dtype)
{
    if (dtype != JAL_DT_F32 && dtype != JAL_DT_F16)
        throw Error(JAL_STATUS_INVALID_FIELD, "KV cache: the elements are F32 or F16");
    return 2ull * n_ctx * head_dim * (dtype == JAL_DT_F16 ? 2 : 4);
}

KvCache::KvCache(const runtime::Device& device, const runtime::Context& context,
                 runtime::Queue& queue, const KvCacheConfig& config,
                 std::span<const uint64_t> head_masks)
    : config_(config)
{
    if (config.n_head_kv == 0 || config.head_dim == 0 || config.n_ctx == 0 ||
        head_masks.size() != config.n_head_kv ||
        (config.dtype != JAL_DT_F32 && config.dtype != JAL_DT_F16))
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("KvCache: {} heads of {} x {} (dtype {}) with {} slice masks",
                                config.n_head_kv, config.n_ctx, config.head_dim,
                                static_cast<int>(config.dtype), head_masks.size()));
    uint64_t all = 0;
    std::vector<uint64_t> table;
    for (uint64_t mask : head_masks) {
        if (mask == 0)
            throw Error(JAL_STATUS_INVALID_FIELD, "KvCache: a head with an empty slice mask");
        const jal_placement placement =
            std::popcount(mask) == 1 ? JAL_PLACE_SLICE : JAL_PLACE_REPLICATED;
        heads_.push_back(
            std::make_unique<runtime::Memory>(context, 2 * k_bytes(), placement, mask));
        table.push_back(heads_.back()->va());
        table.push_back(heads_.back()->va() + k_bytes());
        all |= mask;
    }
    const size_t table_bytes = table.size() * 8;
    table_ = std::make_unique<runtime::Memory>(
        context, table_bytes, std::popcount(all) == 1 ? JAL_PLACE_SLICE : JAL_PLACE_REPLICATED,
        all);
    runtime::HostBuffer host(device, table_bytes);
    std::memcpy(host.data(), table.data(), table_bytes);
    runtime::Signal done(device, 1);
    queue.copy_to_device(table_->va(), host, 0, table_bytes, &done);
    auto r = done.wait_zero(std::chrono::seconds(60));
    if (!r.satisfied || r.status != JAL_STATUS_OK)
        throw Error(r.satisfied ? r.status : JAL_STATUS_TIMEOUT,
                    "KvCache: uploading the head table failed");
}

}  // namespace jal::kernels
