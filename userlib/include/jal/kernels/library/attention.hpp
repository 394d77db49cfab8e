// attention.hpp: GPT-OSS attention for prefill (many query tokens) and decode (one), over
// a KV cache kept in slice-local HBM.
//
// For query head h (KV head g = h / (n_head / n_head_kv), GQA) at position p:
//   s_j = scale * q . k_j  for every cached key j visible from p,
//   visible: j <= p (causal) and, when window > 0, p - j < window (sliding window);
//   m = max(max_j s_j, sink_h);  out = sum_j exp(s_j - m) v_j / (sum_j exp(s_j - m) + exp(sink_h - m))
// The sink logit joins only the denominator (llama.cpp's ggml_soft_max_add_sinks); without
// sinks the exp(sink - m) term is absent. The chip computes it as flash attention: keys in
// chunks, a running maximum and sum per query row (the sink is the running state's start),
// QK^T and PV on the matrix engine, the causal/window mask with VMASK.
//
// KV cache layout, elements F32 or F16 (kv_dtype; e = 4 or 2 bytes), for each KV head g one
// allocation of 2 * n_ctx * head_dim * e bytes:
//   K  at k_va:  n_ctx rows of head_dim (row p = the key at position p);
//   V^T at vt_va: head_dim rows of n_ctx (row c = dimension c of every position's value),
//   transposed so that PV contracts along rows as the matrix engine does.
// An F16 cache holds the keys and values rounded to nearest even as they are appended (as
// llama.cpp's default F16 cache does); the attention's products take them as F16 operands
// against F32 queries and probabilities (exact widening; the matrix engine runs at the
// slower operand's rate, F32), so only the rounding of K and V differs from an F32 cache
// and the cache streams half the bytes.
// A head table in device memory lists {k_va, vt_va} (two u64) per KV head; kernels read it.
//
// Work split: kv_append gives slice s of n the KV heads g = s, s+n, ...; attention splits
// the work into items (block of query tokens, KV head g, key split), item
// i = (block * n_head_kv + g) * key_splits + split, and slice s runs items s, s+n, ....
// kv_head_masks (kv_cache.hpp) lists, per head, the slices that read it; KvCache places the
// head there (one slice: JAL_PLACE_SLICE; several: JAL_PLACE_REPLICATED), so every cache
// read is local. Queries and outputs are read and written per item (a block of tokens, the
// group's heads); the sinks are read by every slice.
//
// Key splits (flash decoding): with key_splits S > 1 each item's keys are cut into S
// ranges on S consecutive slices, of ceil((L + k_block/2) / S) keys each but the last (half
// a chunk shorter, or empty: with append_kv the split holding the newest keys appends them
// before it attends, and the others should not wait for it); splits 1..S-1 send their
// running (max, sum, O) to split 0's slice (SEND/RECV), which merges them and writes the
// output. This is what lets
// a decode step (one query block) use S * n_head_kv slices instead of n_head_kv. The
// dispatch's slice count must be a multiple of S (the kernel traps INVALID_FIELD).
//
// Query tokens of one call have consecutive positions pos0, pos0+1, ... (one sequence); the
// cache must already hold their keys and values (run kv_append first). Both kernels trap
// with OUT_OF_RANGE when pos0 + rows > n_ctx.
//
// Batches (AttentionConfig::batch): one call serves the decode rows of several sequences,
// one row each, listed in device memory (AttentionBatchEntry: the row of q and out, its
// position, its sequence's head table). The kernel runs, entry after entry, what a call
// of one row for that sequence runs (append, queries, key chunks, output): the same
// arithmetic, so the same bits, without a dispatch or a stage for every sequence.
#pragma once

#include <cstdint>
#include <vector>

#include <jal/api.h>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/rope.hpp>
#include <jal/kernels/library/tensor.hpp>

namespace jal::kernels {

struct JAL_API KvAppendConfig {
    uint32_t n_head_kv = 0;
    uint32_t head_dim = 64;
    uint32_t n_ctx = 0;               // positions the cache holds
    uint32_t block_rows = 0;          // tokens a slice moves at once; 0 = 128
    jal_dtype kv_dtype = JAL_DT_F32;  // the cache's elements: F32 or F16 (rounded, RNE)
    uint32_t rows_per_block() const;
};

// Arguments, in order: k (address; rows x n_head_kv*head_dim F32), k_stride, v (address,
// same shape), v_stride, rows, pos0 (position of the first row), heads (address of the
// head table).
JAL_API CodeObject build_kv_append(const KvAppendConfig& config);

// Argument words for k and v (rows x n_head_kv*head_dim F32) written at positions pos0..,
// into the caches listed by the head table at heads_va.
JAL_API std::vector<uint64_t> kv_append_args(const KvAppendConfig& config, const TensorRef& k,
                                             const TensorRef& v, uint32_t pos0, uint64_t heads_va);

// Runs build_kv_append(config)'s program. Throws jal::Error on a bad
// tensor (as kv_append_args) or a failed dispatch (Launcher::run).
JAL_API jal_dispatch_report kv_append(Launcher& launcher, const Program& program,
                                      const KvAppendConfig& config, const TensorRef& k,
                                      const TensorRef& v, uint32_t pos0, uint64_t heads_va,
                                      const DispatchOptions& options = {});

struct JAL_API AttentionConfig {
    uint32_t n_head = 0;
    uint32_t n_head_kv = 0;  // divides n_head
    uint32_t head_dim = 64;
    uint32_t n_ctx = 0;
    uint32_t window = 0;  // 0: full causal; else sliding window of this many positions
    bool sinks = false;
    float scale = 0.0f;       // 0: 1/sqrt(head_dim)
    uint32_t q_block = 0;     // query tokens an item holds; 0: max(1, 128 / (n_head/n_head_kv))
    uint32_t k_block = 0;     // keys a chunk holds; 0: 256 (512 with an F16 cache and few rows)
    uint32_t key_splits = 0;  // 0 or 1: one slice an item; S > 1: flash decoding, below
    // Append the rows' keys and values to the caches first (kv_append's code), each KV head
    // by the slice that then reads it: one dispatch instead of two. With one key split it
    // needs a slice count dividing n_head_kv (else the kernel traps INVALID_FIELD), so that
    // every item of a head runs on the slice that appended it. With key splits S > 1 each
    // item appends the rows whose positions fall in its split's share of the keys (the only
    // one that reads them in this call); the store writes every copy of the head's cache,
    // which must be replicated over the head's splits' slices (kv_head_masks with S), and
    // the rows must be one query block (else INVALID_FIELD): a decode row.
    bool append_kv = false;
    // q and k arrive before RoPE: the kernel rotates them itself (rope.hpp's NEOX rotation,
    // the same instructions, from the cos and sin tables by position), the queries as it
    // loads them and the keys before it appends them. Needs append_kv.
    bool rope = false;
    // The output's format (rows of n_head·head_dim): F32, or the format the next GEMM's
    // activations take (e.g. BF16 before a BF16 projection in ggml numerics), converted
    // with VCVT in out_cvt mode, as the GEMM would convert F32 rows itself: the same bits,
    // fewer bytes stored and read.
    jal_dtype out_dtype = JAL_DT_F32;
    jal_cvt_mode out_cvt = JAL_CVT_OCP;
    jal_dtype kv_dtype = JAL_DT_F32;  // the cache's elements: F32 or F16 (layout above)
    // One row of each of several sequences, listed in device memory (above and
    // attention_batch_args). Needs one key split.
    bool batch = false;
    uint32_t queries_per_item() const;
    uint32_t keys_per_chunk() const;
    uint32_t splits() const;
    float softmax_scale() const;
};

// Arguments, in order: q (address; rows x n_head*head_dim F32, after RoPE), q_stride, out
// (address; rows x n_head*head_dim F32), out_stride, rows, pos0, heads (address of the head
// table), sinks (address of n_head F32; read only when config.sinks); with append_kv also
// k and v (addresses of the rows' keys and values, n_head_kv*head_dim F32 each, q_stride
// apart, as in a fused q | k | v row); with rope also cos and sin (addresses of the tables:
// a row of head_dim/2 F32 a position, rope.hpp).
JAL_API CodeObject build_attention(const AttentionConfig& config);

// Argument words for q and out (rows x n_head*head_dim F32) at positions pos0.., the head
// table at heads_va, (with config.sinks) n_head F32 sink logits at sinks_va and (with
// config.append_kv) the rows' keys at k_va and values at v_va, q's stride apart.
JAL_API std::vector<uint64_t> attention_args(const AttentionConfig& config, const TensorRef& q,
                                             const TensorRef& out, uint32_t pos0, uint64_t heads_va,
                                             uint64_t sinks_va, uint64_t k_va = 0,
                                             uint64_t v_va = 0, const RopeTablesRef& tables = {});

// An entry of a batch's list (AttentionConfig::batch), 16 bytes in device memory. The
// sequence's head table is at heads + the call's heads_offset (so that one list serves
// every layer when a sequence's layers' tables are equally spaced); an entry whose heads is
// 0 ends the list. The kernel traps OUT_OF_RANGE for pos >= n_ctx.
struct AttentionBatchEntry {
    uint32_t row = 0;    // the row of q (and of k, v) and of out
    uint32_t pos = 0;    // its position in the sequence
    uint64_t heads = 0;  // the sequence's head table, before heads_offset
};
static_assert(sizeof(AttentionBatchEntry) == 16);

// Argument words of a batched call (config.batch): q and out as for attention_args (row 0
// at their addresses; the entries' rows index them), the list (entries, ended by one whose
// heads is 0) at list_va, heads_offset added to each entry's heads, and the sinks, the rows'
// keys and values (append_kv) and the RoPE tables (rope: n_positions >= n_ctx, since the
// kernel, not the host, reads the positions) as for attention_args. In order: q, q_stride,
// out, out_stride, list, heads_offset, (append_kv) k, v, then sinks, (rope) cos, sin.
JAL_API std::vector<uint64_t>
attention_batch_args(const AttentionConfig& config, const TensorRef& q, const TensorRef& out,
                     uint64_t list_va, uint64_t heads_offset, uint64_t sinks_va, uint64_t k_va = 0,
                     uint64_t v_va = 0, const RopeTablesRef& tables = {});

// Runs build_attention(config)'s program. Throws jal::Error on a bad
// tensor (as attention_args) or a failed dispatch (Launcher::run).
JAL_API jal_dispatch_report attention(Launcher& launcher, const Program& program,
                                      const AttentionConfig& config, const TensorRef& q,
                                      const TensorRef& out, uint32_t pos0, uint64_t heads_va,
                                      uint64_t sinks_va, const DispatchOptions& options = {});

}  // namespace jal::kernels
