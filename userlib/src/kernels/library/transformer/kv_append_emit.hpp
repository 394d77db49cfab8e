// kv_append_emit.hpp: the instruction sequences of kv_append (attention.hpp has the cache
// layout), shared with the attention kernel that appends a decode step's keys and values
// itself before it reads them (AttentionConfig::append_kv).
#pragma once

#include <cstdint>
#include <functional>

#include <jal/kernels/builder.hpp>

namespace jal::kernels::transformer_detail {

// The keys' RoPE before they are appended (AttentionConfig::rope): constants, and tiles and
// L1 for a block's positions, cos and sin rows and two temporaries. The tables' addresses
// are the kernel's arguments "cos" and "sin", read where they are used.
struct KvAppendRope {
    X table_row, half, one;
    T tidx, tc, ts, x0, x1, ta, tb;
    uint32_t l1_idx, l1_c, l1_s, l1_a, l1_b;
};

// What the kv_append loops work with.
struct KvAppendRegs {
    X k, k_stride, v, v_stride, pos0, dim, key_bytes, ctx_bytes, l1;
    T tid, tk, tv, tvt;
    Q q;    // the loads
    Q qst;  // the stores into the caches, never waited for (see append_block)
    uint32_t head_dim, l1_k, l1_v, l1_vt;
    // The cache's elements: F32, or F16 (the rows converted in place before they are
    // stored; key_bytes and ctx_bytes count the cache's own element size).
    jal_dtype kv_dtype = JAL_DT_F32;
    const KvAppendRope* rope = nullptr;
};

// Rows from the cos and sin tables for `n` consecutive positions from `pos` into tc and ts
// (tidx holds the positions; ta and tb described n × half too); unless !wait, waits for
// both and for `also` more transfers on q issued before (the rows to rotate: their latency
// and the tables' overlap; with !wait the caller waits for the 2 + also). `l1` is a
// scratch register.
void gather_rope_rows(Builder& b, const KvAppendRope& r, X pos, X n, X l1, Q q, int also = 0,
                      bool wait = true);

// n rows of one head (head_dim F32, row_bytes apart) at the L1 address in `l1` (changed)
// rotated by the rows gather_rope_rows loaded.
void rotate_head_rows(Builder& b, const KvAppendRope& r, X l1, X n, uint32_t head_dim,
                      uint32_t row_bytes);

// The D x D identity at l1_id (V is stored transposed through a product with it).
void emit_identity(Builder& b, const KvAppendRegs& r, uint32_t l1_id);

// The n rows loaded into r.tk (keys, rotated if they are to be) and r.tv (values) stored
// into a head's caches at kc (keys) and vc (Vᵀ) from position `pos`: the keys rounded in
// place to r.kv_dtype, the values transposed through the identity and rounded likewise.
// `at(block)` points r.l1 at the rows' place in an L1 block (r.l1_k or r.l1_vt); addr is
// scratch. The stores go on r.qst and are not waited for (append_block says why).
void store_rows(Builder& b, const KvAppendRegs& r, X pos, X n, X kc, X vc, X addr,
                const std::function<void(uint32_t block)>& at);

// Rows [row0, row0 + n) of one head (its columns start `col` bytes into a row of k and v)
// into its caches (keys, rotated first with r.rope; values, transposed; both rounded to
// r.kv_dtype), whose addresses
// are the two words at `entry` in the head table: read once the rows' loads are out, so
// the read's latency overlaps theirs. The stores are not waited for: a slice's DMA ops run
// in issue order, so a later load of the cache on this slice reads them (docs/tile-isa.md,
// "Timing model"), and the slice's end waits for them.
void append_block(Builder& b, const KvAppendRegs& r, X entry, X col, X row0, X n);

}  // namespace jal::kernels::transformer_detail
