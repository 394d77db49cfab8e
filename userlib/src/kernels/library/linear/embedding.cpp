// Embedding lookup (embedding.hpp): ids checked, rows gathered, dequantized, stored.
#include <jal/kernels/library/embedding.hpp>

#include <jal/isa/numerics.hpp>

#include "checks.hpp"
#include "emit.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear {

using namespace detail;

std::string embedding_name(const EmbeddingConfig& c)
{
    return "embedding_dt" + std::to_string(c.table) + "_t" + std::to_string(c.tokens) + "v" +
           std::to_string(c.vocab) + "d" + std::to_string(c.dim);
}

namespace {

// Traps unless every id of the block (tile tids, `rows` of them) is below vocab (unsigned:
// negatives are huge). A timing-only dispatch moves no data: the ids in L1 are whatever
// was there, so they are neither checked nor used (row 0 is gathered instead).
void emit_check_ids(Builder& b, T tids, X rows, X vocab, X timing_only)
{
    Label checked = b.label(), real = b.label();
    b.beq(timing_only, zero, real);
    b.vfill_i32(tids, 0);
    b.jmp(checked);
    b.bind(real);
    b.for_range(zero, rows, 1, [&](X r) {
        X id = b.x();
        b.tread(id, tids, r, 0);
        Label ok = b.label();
        b.bltu(id, vocab, ok);
        b.trap(JAL_STATUS_OUT_OF_RANGE);
        b.bind(ok);
        b.free(id);
    });
    b.bind(checked);
}

// Gathers the table rows named by tids into tout, through traw (the table's format) and a
// conversion to F32 unless the table is F32 already; waits on q.
void emit_gather(Builder& b, T tout, T tids, T traw, jal_dtype table_dt, X table, X table_stride,
                 Q q)
{
    if (table_dt != JAL_DT_F32) {
        b.tgather(traw, table, table_stride, tids, q);
        b.wait(q, 1);
        b.vcvt(tout, traw);
    } else {
        b.tgather(tout, table, table_stride, tids, q);
        b.wait(q, 1);
    }
}

}  // namespace

CodeObject build_embedding(const EmbeddingConfig& c)
{
    const std::string name = embedding_name(c);
    const uint64_t trow = numerics::row_bytes(c.table, c.dim);
    require(c.tokens != 0 && c.vocab != 0 && c.dim != 0 && trow != 0 && c.table != JAL_DT_I32 &&
                c.vocab <= 0x7fffffffu,
            name, "bad shape or format");
    const bool convert = c.table != JAL_DT_F32;
    const uint32_t rb =
        block_rows(name, 2 * (uint64_t{c.dim} * 4 + (convert ? trow : 0) + 4), c.tokens);

    Builder b(name);
    X ids = b.arg("ids", JAL_ARG_ADDRESS);
    X table = b.arg("table", JAL_ARG_ADDRESS);
    X table_stride = b.arg("table_stride");
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    b.acquire();  // the arguments load while a staged program's previous stage finishes
    SliceShare share = emit_slice_range(b, c.tokens);
    const Label done = emit_skip_if_empty(b, share.count);
    {
        X r = b.x();
        b.muli(r, share.begin, 4);
        b.add(ids, ids, r);
        b.mul(r, share.begin, out_stride);
        b.add(out, out, r);
        b.free(r);
    }
    const Blocks row_blocks = emit_blocks(b, share.count, rb);
    const X rb_reg = row_blocks.unit, blocks = row_blocks.count;
    X dim = emit_const(b, c.dim);
    X one = emit_const(b, 1);
    X four = emit_const(b, 4);
    X vocab = emit_const(b, c.vocab);
    X timing_only = b.x();
    b.movsr(timing_only, JAL_SR_TIMING_ONLY);
    const uint32_t l1_ids[2] = {b.l1_alloc(rb * 4), b.l1_alloc(rb * 4)};
    const uint32_t l1_out[2] = {b.l1_alloc(rb * c.dim * 4), b.l1_alloc(rb * c.dim * 4)};
    uint32_t l1_raw = 0;
    if (convert) l1_raw = b.l1_alloc(static_cast<uint32_t>(rb * trow));
    T tids[2] = {b.t(), b.t()}, tout[2] = {b.t(), b.t()}, traw = b.t();
    Q qids[2] = {b.q(), b.q()}, qg = b.q(), qst = b.q();

    emit_double_buffered(
        b, blocks,
        [&](X j, int buf) {  // the block's ids
            X rows = emit_block_size(b, j, share.count, rb_reg);
            emit_tdesc_at(b, tids[buf], l1_ids[buf], rows, one, JAL_DT_I32);
            X a = emit_block_elem_addr(b, j, rb_reg, 4, ids);
            b.tload(tids[buf], a, four, qids[buf]);
            b.free(a);
            b.free(rows);
        },
        [&](X j, int buf) {
            b.wait(qids[buf], 1);
            X rows = emit_block_size(b, j, share.count, rb_reg);
            // Every id in range before any row is read.
            emit_check_ids(b, tids[buf], rows, vocab, timing_only);
            emit_tdesc_at(b, tout[buf], l1_out[buf], rows, dim, JAL_DT_F32);
            if (convert) emit_tdesc_at(b, traw, l1_raw, rows, dim, c.table);
            emit_gather(b, tout[buf], tids[buf], traw, c.table, table, table_stride, qg);
            X a = emit_block_addr(b, j, rb_reg, out_stride, out);
            b.tstore(tout[buf], a, out_stride, qst);
            b.free(a);
            b.free(rows);
        });
    return emit_finish(b, done);
}

}  // namespace jal::kernels::linear
