// Ring all-reduce of F32 vectors across slices (collective.hpp).
#include <jal/kernels/library/collective.hpp>

#include <algorithm>

#include <jal/error.hpp>

#include "emit.hpp"

namespace jal::kernels::linear {

using namespace detail;

namespace {
constexpr uint32_t kSegment = 512u
                              << 10;  // elements: 2 MiB of vector plus up to half of it as a chunk
}  // namespace

std::string all_reduce_name(const AllReduceConfig& c)
{
    return "all_reduce_f32_l" + std::to_string(c.length);
}

CodeObject build_all_reduce(const AllReduceConfig& c)
{
    if (c.length == 0) throw Error(JAL_STATUS_INVALID_FIELD, all_reduce_name(c) + ": empty vector");
    const uint32_t seg_max = std::min(c.length, kSegment);

    Builder b(all_reduce_name(c));
    X table = b.arg("vectors", JAL_ARG_ADDRESS);
    X s = b.slice_index();
    X n = b.slice_count();
    X mine = emit_table_entry(b, table, s);
    b.free(table);
    X one = emit_const(b, 1);
    X four = emit_const(b, 4);
    X right = b.x(), left = b.x();  // s+1 and s−1, mod n
    b.addi(right, s, 1);
    b.remu(right, right, n);
    b.add(left, s, n);
    b.addi(left, left, -1);
    b.remu(left, left, n);

    const uint32_t l1_vec = b.l1_alloc(seg_max * 4);
    const uint32_t l1_tmp =
        b.l1_alloc(static_cast<uint32_t>(ceil_div(seg_max, 2) * 4));  // a chunk, n >= 2
    T tvec = b.t(), tsend = b.t(), trecv = b.t(), tsum = b.t();
    Q qio = b.q(), qs = b.q(), qr = b.q();

    for (uint32_t off = 0; off < c.length; off += seg_max) {
        const uint32_t len = std::min(seg_max, c.length - off);
        X len_reg = emit_const(b, len);
        X addr = b.x();
        b.addi(addr, mine, 0);
        if (off) {
            X o = emit_const(b, int64_t{off} * 4);
            b.add(addr, addr, o);
            b.free(o);
        }
        X l1 = emit_const(b, l1_vec);
        b.tdesc(tvec, l1, one, len_reg, JAL_DT_F32);
        b.tload(tvec, addr, four, qio);
        b.wait(qio, 1);

        X chunk = b.x();  // ceil(len / n)
        b.add(chunk, len_reg, n);
        b.addi(chunk, chunk, -1);
        b.divu(chunk, chunk, n);
        // Describes chunk (idx mod n) of the segment as tile t; leaves its length in `cl`.
        auto chunk_tile = [&](T t, X idx, X cl) {
            X a = b.x();
            b.remu(a, idx, n);
            b.mul(a, a, chunk);
            b.min(a, a, len_reg);
            b.sub(cl, len_reg, a);
            b.min(cl, cl, chunk);
            b.muli(a, a, 4);
            b.addi(a, a, static_cast<int32_t>(l1_vec));
            Label skip = b.label();
            b.beq(cl, zero, skip);  // an empty chunk has no tile (and is neither sent nor received)
            b.tdesc(t, a, one, cl, JAL_DT_F32);
            b.bind(skip);
            b.free(a);
        };
        X last = b.x();
        b.addi(last, n, -1);
        X idx = b.x(), cls = b.x(), clr = b.x();
        // Reduce-scatter: step i sends chunk s−i, receives chunk s−i−1 and adds it.
        b.for_range(zero, last, 1, [&](X i) {
            b.add(idx, s, n);
            b.sub(idx, idx, i);
            chunk_tile(tsend, idx, cls);
            b.addi(idx, idx, -1);
            chunk_tile(tsum, idx, clr);
            Label no_send = b.label(), no_recv = b.label();
            b.beq(cls, zero, no_send);
            b.send(tsend, right, qs);
            b.bind(no_send);
            b.beq(clr, zero, no_recv);
            X a = emit_const(b, l1_tmp);
            b.tdesc(trecv, a, one, clr, JAL_DT_F32);
            b.free(a);
            b.recv(trecv, left, qr);
            b.wait(qr, 1);
            b.vadd(tsum, tsum, trecv);
            b.bind(no_recv);
            Label sent = b.label();
            b.beq(cls, zero, sent);
            b.wait(qs, 1);
            b.bind(sent);
        });
        // All-gather: step i sends chunk s+1−i (finished), receives chunk s−i in place.
        b.for_range(zero, last, 1, [&](X i) {
            b.add(idx, s, n);
            b.addi(idx, idx, 1);
            b.sub(idx, idx, i);
            chunk_tile(tsend, idx, cls);
            b.addi(idx, idx, -1);
            chunk_tile(tsum, idx, clr);
            Label no_send = b.label(), no_recv = b.label();
            b.beq(cls, zero, no_send);
            b.send(tsend, right, qs);
            b.bind(no_send);
            b.beq(clr, zero, no_recv);
            b.recv(tsum, left, qr);
            b.wait(qr, 1);
            b.bind(no_recv);
            Label sent = b.label();
            b.beq(cls, zero, sent);
            b.wait(qs, 1);
            b.bind(sent);
        });
        b.tstore(tvec, addr, four, qio);
        b.wait(qio, 1);
        b.free(idx), b.free(cls), b.free(clr), b.free(last), b.free(chunk);
        b.free(l1), b.free(addr), b.free(len_reg);
    }
    b.end();
    return b.finish();
}

}  // namespace jal::kernels::linear
