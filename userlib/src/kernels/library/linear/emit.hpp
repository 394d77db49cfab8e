// Instruction sequences the linear kernels share: the slice split on the device (the same
// formula as slice_range() on the host) and reading a shard table.
#pragma once

#include <cstdint>
#include <functional>

#include <jal/kernels/builder.hpp>

namespace jal::kernels::linear::detail {

struct SliceShare {
    X slice;  // this slice's index in the dispatch
    X begin;  // first item it owns
    X count;  // how many (0 for a slice past the end)
};

// chunk = ceil(total / slices); begin = min(slice·chunk, total); count = min(chunk, total − begin).
SliceShare emit_slice_range(Builder& b, uint32_t total);
// chunk = ceil(total / n), the share of each of n slices (n >= 1).
void emit_share_chunk(Builder& b, X chunk, X total, X n);
// The same split for item `index` of chunks of `chunk`: begin = min(index·chunk, total),
// count = min(chunk, total − begin) (another slice's share, a ring's chunk).
void emit_share_of(Builder& b, X index, X chunk, X total, X begin, X count);

// A new register holding the 64-bit entry `slice` of the table at address `table`.
X emit_table_entry(Builder& b, X table, X slice);

// A new register holding `value`.
X emit_const(Builder& b, int64_t value);

// Traps INVALID_FIELD unless `of` divides `value` (`of` must not be 0).
void emit_trap_unless_multiple(Builder& b, X value, X of);

// Traps INVALID_FIELD unless value <= limit (signed).
void emit_trap_unless_at_most(Builder& b, X value, int64_t limit);

// Tile t to every slice of the dispatch or stage (ranks 0 … n − 1), itself included: one
// SENDALL (ISA 1.6), which signals q once all have left.
void emit_send_to_every_slice(Builder& b, T t, Q q);
// The same to every slice of the whole dispatch (SENDALL's group JAL_PEER_DISPATCH), also
// from a stage on fewer slices.
void emit_send_to_every_dispatch_slice(Builder& b, T t, Q q);

// Receives from every slice of the dispatch or stage (ranks 0 … n − 1) its share of `total`
// columns of `rows` F32 rows into the rows at L1 offset `l1` (row_bytes apart), sender r's
// columns at their place in the row, and waits for them on q: one RECVALL (ISA 1.6), the
// shares side by side in rank order (emit_share_of's; or, where the shares are of 2·total
// columns and each sender sends half of its share, an expert GEMM's SwiGLU'd columns, those
// halves). t is left describing the whole rows. Every slice must send (a sender without a
// share would leave its receiver waiting).
void emit_receive_shares(Builder& b, T t, uint32_t l1, X rows, uint32_t total, uint32_t row_bytes,
                         Q q);

// emit_receive_shares from the dispatch slices set in `senders` (bit d: dispatch slice d):
// the i-th set bit is sender rank i, whose share is emit_share_of(i) of `total` columns over
// the senders (a stage on those slices that split the columns by its own ranks). One RECVALL
// over the mask (ISA 1.7), the shares side by side in the senders' dispatch order.
void emit_receive_shares_from(Builder& b, T t, uint32_t l1, X rows, uint32_t total,
                              uint32_t row_bytes, Q q, X senders);

// Waits `count` times for one signal each on `q` (count is a runtime value).
void emit_wait_n(Builder& b, Q q, X count);

// The double-buffered loop every streaming kernel here uses, unrolled by two so each half
// names its own buffer's registers: load(0, 0); after_first(); then for i in [0, n): if
// i+1 < n, load(i+1, other buffer); body(i, buffer). While body(i) computes, load(i+1) is
// in flight. after_first (optional) runs once after the first load is issued: the place to
// wait for something loaded before the loop, so its latency overlaps the first tile's.
void emit_double_buffered(Builder& b, X n, const std::function<void(X i, int buf)>& load,
                          const std::function<void(X i, int buf)>& body,
                          const std::function<void()>& after_first = {});

// The same, generalized: loads run `ahead` tiles ahead of the body, and the loop is unrolled
// `slots` times (a multiple of every buffer count the callbacks use); tile i's load and
// body get slot i mod slots. With three W buffers (ahead 2), a store the body queues on the
// DMA engine never delays the load the next body needs. leading_issued: the caller has
// issued the loads of tiles 0 … ahead − 1 (those that exist) into their slots already.
void emit_multi_buffered(Builder& b, X n, int slots, int ahead,
                         const std::function<void(X i, int slot)>& load,
                         const std::function<void(X i, int slot)>& body,
                         const std::function<void()>& after_first = {},
                         bool leading_issued = false);

// Largest multiple of `unit` not above `v`, at least `unit`.
inline uint32_t round_down(uint32_t v, uint32_t unit)
{
    v -= v % unit;
    return v < unit ? unit : v;
}
inline uint64_t ceil_div(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

}  // namespace jal::kernels::linear::detail
