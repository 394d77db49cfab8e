// Instruction sequences shared by the linear kernels (emit.hpp).
#include "emit.hpp"

namespace jal::kernels::linear::detail {

SliceShare emit_slice_range(Builder& b, uint32_t total)
{
    SliceShare r{b.slice_index(), b.x(), b.x()};
    X n = b.slice_count();
    X tot = emit_const(b, total);
    X chunk = b.x();
    emit_share_chunk(b, chunk, tot, n);
    emit_share_of(b, r.slice, chunk, tot, r.begin, r.count);
    b.free(chunk);
    b.free(tot);
    b.free(n);
    return r;
}

void emit_share_chunk(Builder& b, X chunk, X total, X n)
{
    b.add(chunk, total, n);
    b.addi(chunk, chunk, -1);
    b.divu(chunk, chunk, n);  // n >= 1 in any dispatch
}

void emit_share_of(Builder& b, X index, X chunk, X total, X begin, X count)
{
    b.mul(begin, index, chunk);
    b.min(begin, begin, total);
    b.sub(count, total, begin);
    b.min(count, count, chunk);
}

void emit_send_to_every_slice(Builder& b, T t, Q q)
{
    b.send_all(t, zero, q);
}

void emit_send_to_every_dispatch_slice(Builder& b, T t, Q q)
{
    X group = emit_const(b, JAL_PEER_DISPATCH);
    b.send_all(t, group, q);
    b.free(group);
}

namespace {

// Tiles side by side along `total` columns of the rows at L1 offset `l1`, one from each
// member of `group` in its order (a mask of dispatch slices, or 0: the stage's), in one
// RECVALL, waited for on q.
void receive_side_by_side(Builder& b, T t, uint32_t l1, X rows, uint32_t total, uint32_t row_bytes,
                          Q q, X group, bool mask)
{
    X at = emit_const(b, l1), cols = emit_const(b, total);
    b.tdesc(t, at, rows, cols, JAL_DT_F32, row_bytes);
    if (mask)
        b.recv_all_masked(t, group, q);
    else
        b.recv_all(t, group, q);
    b.wait(q, 1);
    b.free(cols);
    b.free(at);
}

}  // namespace

// The shares lie side by side in the senders' order: one RECVALL over their mask (ISA 1.7).
void emit_receive_shares_from(Builder& b, T t, uint32_t l1, X rows, uint32_t total,
                              uint32_t row_bytes, Q q, X senders)
{
    receive_side_by_side(b, t, l1, rows, total, row_bytes, q, senders, true);
}

// The shares lie side by side in rank order (emit_share_of's, or their halves): one RECVALL
// over the stage (ISA 1.6).
void emit_receive_shares(Builder& b, T t, uint32_t l1, X rows, uint32_t total, uint32_t row_bytes,
                         Q q)
{
    receive_side_by_side(b, t, l1, rows, total, row_bytes, q, zero, false);
}

X emit_table_entry(Builder& b, X table, X slice)
{
    X v = b.x();
    b.muli(v, slice, 8);
    b.add(v, v, table);
    b.ld(v, v, 0);
    return v;
}

X emit_const(Builder& b, int64_t value)
{
    X r = b.x();
    b.li(r, value);
    return r;
}

void emit_trap_unless_multiple(Builder& b, X value, X of)
{
    X rem = b.x();
    Label ok = b.label();
    b.remu(rem, value, of);
    b.beq(rem, zero, ok);
    b.trap(JAL_STATUS_INVALID_FIELD);
    b.bind(ok);
    b.free(rem);
}

void emit_trap_unless_at_most(Builder& b, X value, int64_t limit)
{
    X most = emit_const(b, limit);
    Label ok = b.label();
    b.bge(most, value, ok);
    b.trap(JAL_STATUS_INVALID_FIELD);
    b.bind(ok);
    b.free(most);
}

void emit_wait_n(Builder& b, Q q, X count)
{
    b.for_range(zero, count, 1, [&](X) { b.wait(q, 1); });
}

void emit_double_buffered(Builder& b, X n, const std::function<void(X i, int buf)>& load,
                          const std::function<void(X i, int buf)>& body,
                          const std::function<void()>& after_first)
{
    X i = emit_const(b, 0);
    X next = b.x();
    Label top = b.label(), out = b.label();
    b.bge(i, n, out);
    load(i, 0);
    if (after_first) after_first();
    b.bind(top);
    for (int buf = 0; buf < 2; buf++) {
        b.bge(i, n, out);
        Label no_prefetch = b.label();
        b.addi(next, i, 1);
        b.bge(next, n, no_prefetch);
        load(next, 1 - buf);
        b.bind(no_prefetch);
        body(i, buf);
        b.addi(i, i, 1);
    }
    b.jmp(top);
    b.bind(out);
    b.free(next);
    b.free(i);
}

void emit_multi_buffered(Builder& b, X n, int slots, int ahead,
                         const std::function<void(X i, int slot)>& load,
                         const std::function<void(X i, int slot)>& body,
                         const std::function<void()>& after_first, bool leading_issued)
{
    X i = emit_const(b, 0);
    X next = b.x();
    Label top = b.label(), out = b.label();
    b.bge(i, n, out);
    if (!leading_issued) load(i, 0);
    if (after_first) after_first();
    if (!leading_issued) {  // the other leading loads, each only if that tile exists
        Label skip = b.label();
        for (int j = 1; j < ahead; j++) {
            b.li(next, j);
            b.bge(next, n, skip);
            load(next, j);
        }
        b.bind(skip);
    }
    b.bind(top);
    for (int slot = 0; slot < slots; slot++) {
        b.bge(i, n, out);
        Label no_prefetch = b.label();
        b.addi(next, i, ahead);
        b.bge(next, n, no_prefetch);
        load(next, (slot + ahead) % slots);
        b.bind(no_prefetch);
        body(i, slot);
        b.addi(i, i, 1);
    }
    b.jmp(top);
    b.bind(out);
    b.free(next);
    b.free(i);
}

}  // namespace jal::kernels::linear::detail
