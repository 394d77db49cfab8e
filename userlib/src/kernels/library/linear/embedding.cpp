// Embedding lookup (embedding.hpp): ids checked, rows gathered, dequantized, stored.
#include <jal/kernels/library/embedding.hpp>

#include <algorithm>

#include <jal/error.hpp>
#include <jal/isa/numerics.hpp>

#include "emit.hpp"

namespace jal::kernels::linear {

using namespace detail;

std::string embedding_name(const EmbeddingConfig& c)
{
    return "embedding_dt" + std::to_string(c.table) + "_t" + std::to_string(c.tokens) + "v" +
           std::to_string(c.vocab) + "d" + std::to_string(c.dim);
}

CodeObject build_embedding(const EmbeddingConfig& c)
{
    const uint64_t trow = numerics::row_bytes(c.table, c.dim);
    if (c.tokens == 0 || c.vocab == 0 || c.dim == 0 || trow == 0 || c.table == JAL_DT_I32 ||
        c.vocab > 0x7fffffffu)
        throw Error(JAL_STATUS_INVALID_FIELD, embedding_name(c) + ": bad shape or format");
    const bool convert = c.table != JAL_DT_F32;
    const uint64_t per_row = 2 * (uint64_t{c.dim} * 4 + (convert ? trow : 0) + 4);
    if (per_row > (3u << 20))
        throw Error(JAL_STATUS_INVALID_FIELD, embedding_name(c) + ": a row does not fit in L1");
    const uint32_t rb = static_cast<uint32_t>(
        std::max<uint64_t>(1, std::min<uint64_t>(c.tokens, (2u << 20) / per_row)));

    Builder b(embedding_name(c));
    X ids = b.arg("ids", JAL_ARG_ADDRESS);
    X table = b.arg("table", JAL_ARG_ADDRESS);
    X table_stride = b.arg("table_stride");
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    SliceShare share = emit_slice_range(b, c.tokens);
    Label done = b.label();
    b.beq(share.count, zero, done);
    {
        X r = b.x();
        b.muli(r, share.begin, 4);
        b.add(ids, ids, r);
        b.mul(r, share.begin, out_stride);
        b.add(out, out, r);
        b.free(r);
    }
    X rb_reg = emit_const(b, rb);
    X blocks = b.x();
    b.addi(blocks, share.count, static_cast<int32_t>(rb - 1));
    b.divu(blocks, blocks, rb_reg);
    X dim = emit_const(b, c.dim);
    X one = emit_const(b, 1);
    X four = emit_const(b, 4);
    X vocab = emit_const(b, c.vocab);
    X stores = emit_const(b, 0);
    // A timing-only dispatch moves no data: the ids in L1 are whatever was there, so they are
    // neither checked nor used (row 0 is gathered instead).
    X timing_only = b.x();
    b.movsr(timing_only, JAL_SR_TIMING_ONLY);
    const uint32_t l1_ids[2] = {b.l1_alloc(rb * 4), b.l1_alloc(rb * 4)};
    const uint32_t l1_out[2] = {b.l1_alloc(rb * c.dim * 4), b.l1_alloc(rb * c.dim * 4)};
    uint32_t l1_raw = 0;
    if (convert) l1_raw = b.l1_alloc(static_cast<uint32_t>(rb * trow));
    T tids[2] = {b.t(), b.t()}, tout[2] = {b.t(), b.t()}, traw = b.t();
    Q qids[2] = {b.q(), b.q()}, qg = b.q(), qst = b.q();

    auto rows_of = [&](X j) {
        X r = b.x();
        b.mul(r, j, rb_reg);
        b.sub(r, share.count, r);
        b.min(r, r, rb_reg);
        return r;
    };
    auto describe = [&](T t, uint32_t l1, X rows, X cols, jal_dtype dt) {
        X a = emit_const(b, l1);
        b.tdesc(t, a, rows, cols, dt);
        b.free(a);
    };
    emit_double_buffered(
        b, blocks,
        [&](X j, int buf) {  // the block's ids
            X rows = rows_of(j);
            describe(tids[buf], l1_ids[buf], rows, one, JAL_DT_I32);
            X a = b.x();
            b.mul(a, j, rb_reg);
            b.muli(a, a, 4);
            b.add(a, a, ids);
            b.tload(tids[buf], a, four, qids[buf]);
            b.free(a);
            b.free(rows);
        },
        [&](X j, int buf) {
            b.wait(qids[buf], 1);
            X rows = rows_of(j);
            // Every id in range before any row is read (unsigned: negatives are huge).
            Label checked = b.label(), real = b.label();
            b.beq(timing_only, zero, real);
            b.vfill_i32(tids[buf], 0);
            b.jmp(checked);
            b.bind(real);
            b.for_range(zero, rows, 1, [&](X r) {
                X id = b.x();
                b.tread(id, tids[buf], r, 0);
                Label ok = b.label();
                b.bltu(id, vocab, ok);
                b.trap(JAL_STATUS_OUT_OF_RANGE);
                b.bind(ok);
                b.free(id);
            });
            b.bind(checked);
            describe(tout[buf], l1_out[buf], rows, dim, JAL_DT_F32);
            if (convert) {
                describe(traw, l1_raw, rows, dim, c.table);
                b.tgather(traw, table, table_stride, tids[buf], qg);
                b.wait(qg, 1);
                b.vcvt(tout[buf], traw);
            } else {
                b.tgather(tout[buf], table, table_stride, tids[buf], qg);
                b.wait(qg, 1);
            }
            X a = b.x();
            b.mul(a, j, rb_reg);
            b.mul(a, a, out_stride);
            b.add(a, a, out);
            b.tstore(tout[buf], a, out_stride, qst);
            b.addi(stores, stores, 1);
            b.free(a);
            b.free(rows);
        });
    emit_wait_n(b, qst, stores);
    b.bind(done);
    b.end();
    return b.finish();
}

}  // namespace jal::kernels::linear
