// attention.cpp: flash attention over the slice-local KV cache, with GQA, sinks and the
// sliding window (attention.hpp).
//
// An item is (KV head g, block of n query tokens). Its r = n_head/n_head_kv query heads
// are stacked head-major into one matrix of r*n rows (row hh*n + t), so one MMA serves the
// whole group and every block of n rows has consecutive query positions, which is what
// VMASK describes. Per chunk of keys, per row: S = Q K^T (Q pre-scaled), mask, new maximum
// m' = max(m, max S), P = exp(S - m'), alpha = exp(m - m'), l = l*alpha + sum P,
// O = O*alpha + P V. The running state starts at m = sink, l = 1 (the sink's own term),
// or m = -FLT_MAX, l = 0 without sinks: a finite start keeps a fully masked chunk from
// producing exp(-inf - -inf).
#include <jal/isa/numerics.hpp>
#include <jal/kernels/library/attention.hpp>

#include <algorithm>
#include <bit>
#include <cmath>

#include "attention_codegen.hpp"
#include "row_blocks.hpp"
#include "tensor_checks.hpp"

namespace jal::kernels {

using namespace transformer_detail;

uint32_t AttentionConfig::queries_per_item() const
{
    const uint32_t r = n_head_kv ? n_head / n_head_kv : 1;
    return q_block ? q_block : std::max(1u, 128 / std::max(1u, r));
}

uint32_t AttentionConfig::keys_per_chunk() const
{
    if (k_block) return k_block;
    // An F16 cache: twice the keys a chunk, so that a chunk's loads move as many bytes (a
    // chunk of 256 F16 keys is 32 kB a load, a quarter of the HBM latency at the slice's
    // bandwidth: two chunks in flight would not keep it busy), while the stacked query rows
    // (and with them the score buffers) are small.
    const uint32_t rows = queries_per_item() * (n_head_kv ? n_head / n_head_kv : 1);
    return kv_dtype == JAL_DT_F16 && rows <= 128 ? 512 : 256;
}

uint32_t AttentionConfig::splits() const
{
    return key_splits ? key_splits : 1;
}

float AttentionConfig::softmax_scale() const
{
    return scale != 0.0f ? scale
                         : static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

CodeObject build_attention(const AttentionConfig& cfg)
{
    const std::string name =
        "attention_h" + std::to_string(cfg.n_head) + "_g" + std::to_string(cfg.n_head_kv) + "_d" +
        std::to_string(cfg.head_dim) + (cfg.window ? "_w" + std::to_string(cfg.window) : "") +
        (cfg.sinks ? "_sinks" : "") + (cfg.append_kv ? "_app" : "") + (cfg.rope ? "_rope" : "") +
        (cfg.out_dtype != JAL_DT_F32 ? "_o" + std::to_string(cfg.out_dtype) : "") +
        (cfg.kv_dtype == JAL_DT_F16 ? "_kvf16" : "") + (cfg.batch ? "_batch" : "");
    require(cfg.n_head > 0 && cfg.n_head_kv > 0 && cfg.n_head % cfg.n_head_kv == 0, name,
            "n_head_kv must divide n_head");
    require(cfg.head_dim > 0 && cfg.n_ctx > 0, name, "head_dim and n_ctx must be positive");
    require(cfg.splits() <= 64, name, "at most 64 key splits");
    require(cfg.kv_dtype == JAL_DT_F32 || cfg.kv_dtype == JAL_DT_F16, name,
            "the cache's elements are F32 or F16");
    require(!cfg.rope || cfg.append_kv, name, "rope needs append_kv");
    require(!cfg.batch || cfg.splits() == 1, name, "a batch needs one key split");
    // The queries' rotation borrows the key and value buffers (two of each, laid out one
    // after another): the positions, cos, sin and two temporaries of an item's queries.
    const uint64_t kv_bytes = cfg.kv_dtype == JAL_DT_F16 ? 2 : 4;
    require(!cfg.rope || uint64_t{cfg.queries_per_item()} * (4 + 4ull * 2 * cfg.head_dim) + 64 <=
                             4ull * cfg.keys_per_chunk() * cfg.head_dim * kv_bytes,
            name, "the queries' rotation does not fit the key buffers");
    require(numerics::row_bytes(cfg.out_dtype, cfg.head_dim) != 0, name,
            "the output's format needs whole blocks in a head");
    return emit_attention(cfg, name);
}

std::vector<uint64_t> attention_args(const AttentionConfig& cfg, const TensorRef& q,
                                     const TensorRef& out, uint32_t pos0, uint64_t heads_va,
                                     uint64_t sinks_va, uint64_t k_va, uint64_t v_va,
                                     const RopeTablesRef& tables)
{
    const std::string k = "attention";
    require(!cfg.batch, k, "a batch's arguments come from attention_batch_args");
    check_tensor(q, JAL_DT_F32, cfg.n_head * cfg.head_dim, 0, k, "q");
    check_tensor(out, cfg.out_dtype, cfg.n_head * cfg.head_dim, q.rows, k, "out");
    require(heads_va != 0, k, "no head table");
    require(!cfg.sinks || sinks_va != 0, k, "the kernel was built with sinks but none were given");
    require(uint64_t{pos0} + q.rows <= cfg.n_ctx, k, "positions run past the cache");
    std::vector<uint64_t> a{q.va,   stride_of(q), out.va,   stride_of(out),
                            q.rows, pos0,         heads_va, cfg.sinks ? sinks_va : 0};
    if (cfg.append_kv) {
        require(k_va != 0 && v_va != 0, k, "append_kv needs the rows' keys and values");
        a.insert(a.end(), {k_va, v_va});
    }
    if (cfg.rope) {
        require(tables.cos_va && tables.sin_va, k, "rope needs the cos and sin tables");
        require(uint64_t{pos0} + q.rows <= tables.n_positions, k,
                "positions run past the rope tables");
        a.insert(a.end(), {tables.cos_va, tables.sin_va});
    }
    return a;
}

std::vector<uint64_t> attention_batch_args(const AttentionConfig& cfg, const TensorRef& q,
                                           const TensorRef& out, uint64_t list_va,
                                           uint64_t heads_offset, uint64_t sinks_va, uint64_t k_va,
                                           uint64_t v_va, const RopeTablesRef& tables)
{
    const std::string k = "attention";
    require(cfg.batch, k, "batch arguments for a kernel built without batch");
    check_tensor(q, JAL_DT_F32, cfg.n_head * cfg.head_dim, 0, k, "q");
    check_tensor(out, cfg.out_dtype, cfg.n_head * cfg.head_dim, q.rows, k, "out");
    require(list_va != 0, k, "no list of rows");
    require(!cfg.sinks || sinks_va != 0, k, "the kernel was built with sinks but none were given");
    std::vector<uint64_t> a{q.va, stride_of(q), out.va, stride_of(out), list_va, heads_offset};
    if (cfg.append_kv) {
        require(k_va != 0 && v_va != 0, k, "append_kv needs the rows' keys and values");
        a.insert(a.end(), {k_va, v_va});
    }
    a.push_back(cfg.sinks ? sinks_va : 0);
    if (cfg.rope) {
        require(tables.cos_va && tables.sin_va, k, "rope needs the cos and sin tables");
        require(tables.n_positions >= cfg.n_ctx, k,
                "a batch's rope tables must cover every position of the cache");
        a.insert(a.end(), {tables.cos_va, tables.sin_va});
    }
    return a;
}

jal_dispatch_report attention(Launcher& launcher, const Program& program,
                              const AttentionConfig& config, const TensorRef& q,
                              const TensorRef& out, uint32_t pos0, uint64_t heads_va,
                              uint64_t sinks_va, const DispatchOptions& options)
{
    require(!config.batch, "attention", "a batch's arguments come from attention_batch_args");
    const uint64_t mask = options.slice_mask ? options.slice_mask : launcher.usable_slice_mask();
    require(std::popcount(mask) % config.splits() == 0, "attention",
            "the dispatch's slice count must be a multiple of key_splits");
    return launcher.run(program, args_of(attention_args(config, q, out, pos0, heads_va, sinks_va)),
                        options);
}

}  // namespace jal::kernels
