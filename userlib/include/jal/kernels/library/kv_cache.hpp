// kv_cache.hpp: the KV cache of one attention layer in slice-local HBM (layout in
// attention.hpp): per KV head one allocation holding K (n_ctx x head_dim) then V^T
// (head_dim x n_ctx), F32 or F16 elements, placed on the slices whose attention items use
// that head, and a head table listing {k_va, vt_va} per head that kv_append and attention
// read.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <jal/api.h>
#include <jal/hw/isa.h>
#include <jal/jal.hpp>

namespace jal::kernels {

struct KvCacheConfig {
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 64;
    uint32_t n_ctx = 0;
    jal_dtype dtype = JAL_DT_F32;  // the elements: F32 or F16 (kv_append rounds to it)
    uint64_t element_bytes() const { return dtype == JAL_DT_F16 ? 2 : 4; }
};

// Bytes of one KV head's cache of n_ctx positions (K then V^T) in `dtype` (F32 or F16).
JAL_API uint64_t kv_head_bytes(uint32_t n_ctx, uint32_t head_dim, jal_dtype dtype);

// Where attention's work split reads each head, for a dispatch on the logical slices of
// dispatch_mask (dispatch slice i is the i-th set bit, ascending): item j runs on dispatch
// slice j mod n and uses head (j / key_splits) mod n_head_kv. Returns one logical slice
// mask per head: every slice that runs an item of that head.
JAL_API std::vector<uint64_t> kv_head_masks(uint64_t dispatch_mask, uint32_t n_head_kv,
                                            uint32_t key_splits = 1);

class JAL_API KvCache {
public:
    // Allocates every head's cache on head_masks[g] (one slice: JAL_PLACE_SLICE; several:
    // JAL_PLACE_REPLICATED, so every reader is local and device writes reach every copy)
    // and the head table, replicated on all those slices, uploaded through `queue`.
    KvCache(const runtime::Device& device, const runtime::Context& context, runtime::Queue& queue,
            const KvCacheConfig& config, std::span<const uint64_t> head_masks);

    const KvCacheConfig& config() const { return config_; }
    uint64_t heads_va() const { return table_->va(); }
    uint64_t k_va(uint32_t head) const { return heads_.at(head)->va(); }
    uint64_t vt_va(uint32_t head) const { return heads_.at(head)->va() + k_bytes(); }
    uint64_t k_bytes() const
    {
        return uint64_t{config_.n_ctx} * config_.head_dim * config_.element_bytes();
    }

private:
    KvCacheConfig config_;
    std::vector<std::unique_ptr<runtime::Memory>> heads_;
    std::unique_ptr<runtime::Memory> table_;
};

}  // namespace jal::kernels
