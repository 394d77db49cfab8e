// The expert GEMM split by rows with every pair in L1 (expert_gemm_kernel.hpp): all pairs'
// activations gathered once, the slice's rows of the active experts streamed through two W
// buffers without a pause between experts.
#include <jal/isa/numerics.hpp>

#include "expert_gemm_kernel.hpp"
#include "swiglu_rows.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear::detail {

void ExpertGemmKernel::layout_streamed()
{
    l1_elist = b.l1_alloc(p.pairs * 4), l1_alist = b.l1_alloc(c.experts * 4);
    l1_widx[0] = b.l1_alloc(p.tn * 4), l1_widx[1] = b.l1_alloc(p.tn * 4);
    l1_brows = b.l1_alloc(p.pairs * p.tn * 4);
    if (c.combine) {
        l1_po = b.l1_alloc(p.pairs * p.tn * 4);
        l1_cw = b.l1_alloc(p.pairs * 4);
        l1_cx = b.l1_alloc(c.tokens * p.tn * 4);
        l1_cto = b.l1_alloc(c.tokens * p.tn * 4);
    }
    // Tile registers are 16: the bias row and the x-row list's tiles (used by the per-expert
    // loop and the sort) are described anew for the bias rows and the active experts.
    telist = b.t(), twidx = b.t(), tbrows = tbias, talist = tglist;
    if (c.combine) qc = b.q();
    X np = emit_const(b, p.pairs);
    emit_tdesc_at(b, telist, l1_elist, np, one, JAL_DT_I32);
    b.free(np);
}

// Pairs [lo, lo + n) of an even split of all pairs over na experts, for expert g: the first
// pairs % na experts get one more. t0 and t1 are scratch (the loop is short of registers).
void ExpertGemmKernel::even_share(X g, X na, X lo, X n, X t0, X t1)
{
    b.li(n, p.pairs);
    b.divu(t0, n, na);  // base
    b.remu(t1, n, na);  // extra
    b.mul(lo, g, t0);
    b.min(n, g, t1);
    b.add(lo, lo, n);  // + min(g, extra)
    b.sltu(n, g, t1);
    b.add(n, n, t0);  // base + (g < extra)
}

// W tile j: the slice's rows of active experts [j·per_tile, +per_tile), gathered by row
// index (expert e's rows are e·ncols .. e·ncols+ncols-1 of the slice's block).
void ExpertGemmKernel::stream_load(X j, int buf, X na, X per_tile, bool prefetched)
{
    X a0 = b.x(), g_end = b.x(), rows = b.x();
    b.mul(a0, j, per_tile);
    b.add(g_end, a0, per_tile);
    b.min(g_end, g_end, na);
    b.sub(rows, g_end, a0);
    b.mul(rows, rows, ncols);
    if (prefetched) {  // issued by the kernel before (w0_prefetched): described, signalled
        emit_tdesc_at(b, tw[buf], l1_w[buf], rows, kdim, c.weight);
        b.signal(qw[buf], 1);
        for (X r : {rows, g_end, a0}) b.free(r);
        return;
    }
    b.for_range(a0, g_end, 1, [&](X g) {
        X e = b.x(), at = b.x();
        b.tread(e, talist, g, 0);
        b.mul(e, e, ncols);
        b.sub(at, g, a0);
        b.mul(at, at, ncols);
        b.muli(at, at, 4);
        b.addi(at, at, static_cast<int32_t>(l1_widx[buf]));
        b.tdesc(twidx, at, one, ncols, JAL_DT_I32);
        b.viota(twidx, e, one);
        b.free(at);
        b.free(e);
    });
    X at = emit_const(b, l1_widx[buf]);
    b.tdesc(twidx, at, rows, one, JAL_DT_I32);
    b.free(at);
    emit_tdesc_at(b, tw[buf], l1_w[buf], rows, kdim, c.weight);
    b.tgather(tw[buf], w_exp, w_stride, twidx, qw[buf], true);
    b.free(rows);
    b.free(g_end);
    b.free(a0);
}

// prefetch_n: the next kernel's first W tile, as its stream_load(0) would gather it (its
// rows slice_range(prefetch_n) of the first active experts, as many as its tile holds) into
// the region at the top of L1, on the DMA engine right behind this kernel's last tile. dst
// is a W tile register this kernel is done with. The shard-table entry's read (a scalar
// miss) overlaps the wait for that last tile.
void ExpertGemmKernel::issue_next_w(X na, T dst)
{
    const uint64_t wrow = numerics::row_bytes(c.prefetch_weight, c.prefetch_kdim);
    const SliceShare next = emit_slice_range(b, c.prefetch_n);  // its rows on this slice
    b.free(next.begin);
    X s = next.slice, cnt = next.count, per = b.x();
    b.li(per, expert_tile_rows(c.prefetch_n, wrow));
    b.divu(per, per, cnt);  // experts a tile (every slice has rows: send_output traps)
    b.min(per, per, na);
    b.for_range(zero, per, 1, [&](X g) {
        X e = b.x(), at = b.x();
        b.tread(e, talist, g, 0);
        b.mul(e, e, cnt);
        b.mul(at, g, cnt);
        b.muli(at, at, 4);
        b.addi(at, at, static_cast<int32_t>(region.list));
        b.tdesc(twidx, at, one, cnt, JAL_DT_I32);
        b.viota(twidx, e, one);
        b.free(at);
        b.free(e);
    });
    b.mul(per, per, cnt);  // the tile's rows
    {
        X at = emit_const(b, region.list);
        b.tdesc(twidx, at, per, one, JAL_DT_I32);
        b.li(at, c.prefetch_kdim);
        emit_tdesc_at(b, dst, region.tile, per, at, c.prefetch_weight);
        b.free(at);
    }
    X table = b.arg_again("next_w_shards");
    X w = emit_table_entry(b, table, s);
    X stride = emit_const(b, static_cast<int64_t>(wrow));
    b.tgather(dst, w, stride, twidx, qst, true);  // not waited for: the next kernel's MMA does
    for (X r : {stride, w, table, per, cnt, s}) b.free(r);
}

// Each expert of tile j: its pairs' rows of the accumulator += their activations × its rows.
void ExpertGemmKernel::stream_body(X j, int buf, X na, X per_tile)
{
    b.wait(qw[buf], 1);
    X a0 = b.x(), g_end = b.x();
    b.mul(a0, j, per_tile);
    b.add(g_end, a0, per_tile);
    b.min(g_end, g_end, na);
    b.for_range(a0, g_end, 1, [&](X g) {
        X e = b.x(), lo = b.x(), n = b.x(), a = b.x();
        b.tread(e, talist, g, 0);
        b.tread(lo, tstart, e, 0);
        b.tread(n, tcount, e, 0);
        b.sub(n, n, lo);
        {  // timing only: active expert g has the g-th even share of the pairs
            Label real = b.label();
            b.movsr(a, JAL_SR_TIMING_ONLY);
            b.beq(a, zero, real);
            even_share(g, na, lo, n, e, a);
            b.bind(real);
        }
        b.sub(e, g, a0);
        b.mul(e, e, ncols);
        b.muli(e, e, static_cast<int32_t>(p.wrow));
        b.addi(e, e, static_cast<int32_t>(l1_w[buf]));
        b.tdesc(tgidx, e, ncols, kdim, c.weight);
        if (p.token_rows) {
            multiply_pairs(lo, n, e, a);
        } else {
            b.muli(a, lo, static_cast<int32_t>(p.tn * 4));
            b.addi(a, a, static_cast<int32_t>(l1_acc));
            b.tdesc(tsub, a, n, ncols, JAL_DT_F32, p.tn * 4);
            b.muli(a, lo, static_cast<int32_t>(p.arow));
            b.addi(a, a, static_cast<int32_t>(l1_a));
            b.tdesc(ta, a, n, kdim, p.act);
            b.mma(tsub, ta, tgidx);
        }
        b.free(a);
        b.free(n);
        b.free(lo);
        b.free(e);
    });
    b.free(g_end);
    b.free(a0);
}

// Row of pair i: expert elist[i]'s bias from column col0. With the SwiGLU (the halves
// layout) the h gate columns from col0/2, and the h up columns from N/2 + col0/2 into the
// SwiGLU's scratch (its own L1 range: rows interleaved with the gate half's would make the
// second gather wait for the first, and every W load behind it on the DMA engine).
void ExpertGemmKernel::gather_bias_rows(X np)
{
    X base = b.x(), rb = emit_const(b, c.n * 4);
    emit_tdesc_at(b, telist, l1_elist, np, one, JAL_DT_I32);
    if (!c.swiglu) {
        b.muli(base, col0, 4);
        b.add(base, base, bias);
        emit_tdesc_at(b, tbrows, l1_brows, np, ncols, JAL_DT_F32, p.tn * 4);
        b.tgather(tbrows, base, rb, telist, qio);
    } else {
        X h = halved(ncols), a = halved(col0);
        b.muli(base, a, 4);
        b.add(base, base, bias);
        emit_tdesc_at(b, tbrows, l1_brows, np, h, JAL_DT_F32, p.tn * 4);
        b.tgather(tbrows, base, rb, telist, qio);
        b.addi(base, base, static_cast<int32_t>(c.n / 2 * 4));
        emit_tdesc_at(b, tbrows, l1_glu, np, h, JAL_DT_F32, glu_stride());
        b.tgather(tbrows, base, rb, telist, qio);
        b.free(a);
        b.free(h);
    }
    b.free(rb);
    b.free(base);
}

// Split by rows, a row of the SwiGLU's scratch: half a W tile's columns.
uint32_t ExpertGemmKernel::glu_stride() const
{
    return (p.tn + 1) / 2 * 4;
}

// Bias rows added, each pair's row (the slice's columns of it) stored where it goes; with
// the SwiGLU, each pair's h output columns of its gate | up halves.
void ExpertGemmKernel::stream_finish()
{
    X np = nvalid;
    emit_tdesc_at(b, tacc, l1_acc, np, ncols, JAL_DT_F32, p.tn * 4);
    if (c.swiglu) {
        glu_rows(np);
        return;
    }
    if (c.bias) {
        b.wait(qio, 1);
        emit_tdesc_at(b, tbrows, l1_brows, np, ncols, JAL_DT_F32, p.tn * 4);
        b.vadd(tacc, tacc, tbrows);
    }
    if (c.combine) {
        combine_rows(np);
        return;
    }
    b.for_range(zero, np, 1, [&](X r) { store_row(r, r, p.tn * 4); });
}

// The bias halves added (the same adds as one over the row), then the SwiGLU of the
// slice's halves (gate columns [0, h), up [h, 2h) of each accumulator row) into the gate
// half, swiglu_oai's instructions; each pair's h columns stored at column col0/2 of its row
// of y. Tiles borrow tsub, tgidx and tw[0] (the W loads are done).
void ExpertGemmKernel::glu_rows(X np)
{
    X h = halved(ncols), a = b.x();
    emit_tdesc_at(b, tsub, l1_acc, np, h, JAL_DT_F32, p.tn * 4);
    b.muli(a, h, 4);
    b.addi(a, a, static_cast<int32_t>(l1_acc));
    b.tdesc(tgidx, a, np, h, JAL_DT_F32, p.tn * 4);
    emit_tdesc_at(b, tw[0], l1_glu, np, h, JAL_DT_F32, glu_stride());
    if (c.bias) {
        b.wait(qio, 2);
        emit_tdesc_at(b, tbrows, l1_brows, np, h, JAL_DT_F32, p.tn * 4);
        b.vadd(tsub, tsub, tbrows);
        b.vadd(tgidx, tgidx, tw[0]);
    }
    const SwigluBounds bounds = emit_swiglu_bounds(b, c.swiglu_limit);
    emit_swiglu_rows(b, tsub, tgidx, tw[0], bounds, c.swiglu_alpha);
    free_swiglu_bounds(b, bounds);
    b.free(a);
    b.free(h);
    if (c.send_output) {
        emit_send_to_every_slice(b, tsub,
                                 qst);  // the SwiGLU'd rows: every pair's h columns, sorted
        return;
    }
    b.for_range(zero, np, 1, [&](X r) { store_row(r, r, p.tn * 4); });
}

// recv_input: sender r's columns of every pair (its slice_range of the gate | up rows 2·K,
// halved: its SwiGLU's output columns) into the x rows, in the order both sorted the pairs
// (every slice has rows: the kernels trap otherwise). tx ends as the whole rows, as a
// gather leaves it.
void ExpertGemmKernel::receive_x(X np)
{
    emit_receive_shares(b, tx, l1_x, np, c.kdim, static_cast<uint32_t>(p.xrow), qr);
    emit_tdesc_at(b, tx, l1_x, np, kdim, JAL_DT_F32);
}

// token_rows: the tokens' rows of x (F32) into l1_x, issued right after the ids: they do
// not wait for the pairs to be sorted. The tile register is W buffer 0's, free until the
// W loads describe it again.
// recv_x: every sender's columns of them instead (before the logits: the FIFOs' order),
// then one signal on qt as after the load.
void ExpertGemmKernel::issue_token_rows()
{
    X rows = emit_const(b, c.tokens);
    if (c.recv_x) {
        if (c.x_from_self) {  // whole, forwarded by this slice's router
            X me = b.slice_index();
            emit_tdesc_at(b, tw[0], l1_x, rows, kdim, JAL_DT_F32);
            b.recv(tw[0], me, qt);
            b.wait(qt, 1);
            b.free(me);
        } else {
            emit_receive_shares(b, tw[0], l1_x, rows, c.kdim, c.kdim * 4, qt);
        }
        b.signal(qt, 1);
    } else {
        emit_tdesc_at(b, tw[0], l1_x, rows, kdim, JAL_DT_F32);
        b.tload(tw[0], x, x_stride, qt);
    }
    b.free(rows);
}

// token_rows, while the first W tile loads: each token's row normed and converted once
// (the same instructions a gathered copy of it gets, so the same bits).
void ExpertGemmKernel::prepare_token_rows()
{
    X rows = emit_const(b, c.tokens);
    b.wait(qt, 1);
    emit_tdesc_at(b, tx, l1_x, rows, kdim, JAL_DT_F32);
    prepare_x(rows);
    if (p.convert) {
        emit_tdesc_at(b, ta, l1_a, rows, kdim, p.act);
        b.vcvt(ta, tx, activation_cvt_mode(c.numerics));
    }
    b.free(rows);
}

// token_rows: entries [lo, lo + n) of the sorted lists, each its accumulator row += its
// token's row × the expert's rows (tgidx). The x-row list is read through twidx, whose
// W-row indices the next tile's gather has already taken. end and a are the caller's
// scratch (the loop is short of registers).
void ExpertGemmKernel::multiply_pairs(X lo, X n, X end, X a)
{
    b.add(end, lo, n);
    emit_tdesc_at(b, twidx, l1_glist, end, one, JAL_DT_I32);
    b.for_range(lo, end, 1, [&](X r) {
        b.muli(a, r, static_cast<int32_t>(p.tn * 4));
        b.addi(a, a, static_cast<int32_t>(l1_acc));
        b.tdesc(tsub, a, one, ncols, JAL_DT_F32);
        b.tread(a, twidx, r, 0);
        b.muli(a, a, static_cast<int32_t>(p.arow));
        b.addi(a, a, static_cast<int32_t>(l1_a));
        b.tdesc(ta, a, one, kdim, p.act);
        b.mma(tsub, ta, tgidx);
    });
}

// v / 2 in a new register.
X ExpertGemmKernel::halved(X v)
{
    X h = b.x(), two = emit_const(b, 2);
    b.divu(h, v, two);
    b.free(two);
    return h;
}

// The fused combine's inputs, the pairs' weights and the slice's columns of the out rows,
// loaded before the activations are gathered: their latency (a remote round trip) then
// overlaps the gather and the streaming instead of coming after the last MMA. Tiles borrow
// the W buffers' registers (described anew by each W load).
void ExpertGemmKernel::issue_combine_loads()
{
    out = b.arg("out", JAL_ARG_ADDRESS);
    out_stride = b.arg("out_stride");
    X rows = emit_const(b, c.tokens);
    if (!c.recv_input) {  // received, the weights are in L1 already
        weights = b.arg("weights", JAL_ARG_ADDRESS);
        X kk = emit_const(b, c.k), k_bytes = emit_const(b, c.k * 4);
        emit_tdesc_at(b, tw[0], l1_cw, rows, kk, JAL_DT_F32);
        b.tload(tw[0], weights, k_bytes, qc);
        for (X r : {k_bytes, kk, weights}) b.free(r);
    }
    emit_tdesc_at(b, tw[1], l1_cx, rows, ncols, JAL_DT_F32, p.tn * 4);
    if (c.recv_x_columns) {  // from this slice's gate|up (send_x_columns)
        X me = b.slice_index();
        b.recv(tw[1], me, qc);
        b.free(me);
    } else {
        X xa = b.x();
        b.muli(xa, col0, 4);
        b.add(xa, xa, out);
        b.tload(tw[1], xa, out_stride, qc);
        b.free(xa);
    }
    for (X r : {rows, out_stride, out}) b.free(r);
}

// The fused combine: the accumulator's rows (sorted by expert) copied into pair order, then
// for the slice's columns out[t] = out[t] + ((w0·y[t·k] + w1·y[t·k+1]) + ...), moe_combine's
// instructions and order; y is never stored. Tiles borrow the W buffers (done), tx and tgidx.
void ExpertGemmKernel::combine_rows(X np)
{
    out = b.arg_again("out");
    out_stride = b.arg_again("out_stride");
    X rows = emit_const(b, c.tokens);
    X xa = b.x();
    b.muli(xa, col0, 4);
    b.add(xa, xa, out);
    emit_tdesc_at(b, tw[1], l1_cx, rows, ncols, JAL_DT_F32, p.tn * 4);
    b.for_range(zero, np, 1, [&](X r) {
        X pr = b.x(), a = b.x();
        b.tread(pr, tplist, r, 0);
        b.muli(a, pr, static_cast<int32_t>(p.tn * 4));
        b.addi(a, a, static_cast<int32_t>(l1_po));
        b.tdesc(tsub, a, one, ncols, JAL_DT_F32);
        b.muli(a, r, static_cast<int32_t>(p.tn * 4));
        b.addi(a, a, static_cast<int32_t>(l1_acc));
        b.tdesc(tgidx, a, one, ncols, JAL_DT_F32);
        b.vcopy(tsub, tgidx);
        b.free(a);
        b.free(pr);
    });
    b.wait(qc, c.recv_input ? 1 : 2);
    const uint32_t l1_wts = c.recv_input ? l1_rw : l1_cw;
    emit_tdesc_at(b, tx, l1_cto, rows, ncols, JAL_DT_F32, p.tn * 4);
    for (uint32_t j = 0; j < c.k; j++) {
        // expert j of every token (rows t·k + j) and its weight (column j), strided views
        emit_tdesc_at(b, tsub, l1_po + j * p.tn * 4, rows, ncols, JAL_DT_F32, c.k * p.tn * 4);
        emit_tdesc_at(b, tgidx, l1_wts + j * 4, rows, one, JAL_DT_F32, c.k * 4);
        if (j) {
            b.vmul(tsub, tsub, tgidx);
            b.vadd(tx, tx, tsub);
        } else {
            b.vmul(tx, tsub, tgidx);
        }
    }
    b.vadd(tx, tw[1], tx);
    b.tstore(tx, xa, out_stride, qst);
    for (X r : {xa, rows, out_stride, out}) b.free(r);
    if (c.send_residual) emit_send_to_every_slice(b, tx, qst);  // to every slice's x rows (recv_x)
}

// Timing only, the ids read as zeros (no tile is filled), so the sort would put every pair
// on one expert. The dispatch is charged instead for the pairs spread evenly over the
// experts uniform routing makes active (uniform_active()): the same instructions, tiles and
// transfers as a real run with those ids.
void ExpertGemmKernel::timing_only_counts()
{
    Label real = b.label();
    X timing = b.x();
    b.movsr(timing, JAL_SR_TIMING_ONLY);
    b.beq(timing, zero, real);
    b.li(nvalid, p.pairs);
    b.li(nactive, uniform_active(c));
    b.bind(real);
    b.free(timing);
}

// Split by rows, every pair in L1: all pairs' activations gathered in sorted order once,
// their bias rows gathered alongside, then the active experts' rows streamed through two
// W buffers, as many whole experts per tile as fit (no pause between experts).
void ExpertGemmKernel::stream_rows(X w)
{
    w_exp = w;
    if (c.swiglu) {  // the halves layout needs an even share (and so an even first column)
        X two = emit_const(b, 2);
        emit_trap_unless_multiple(b, ncols, two);
        b.free(two);
    }
    timing_only_counts();
    Label nothing = b.label();
    if (c.send_residual) {  // its receivers would wait for good
        Label some = b.label();
        b.bne(nvalid, zero, some);
        b.trap(JAL_STATUS_INVALID_FIELD);
        b.bind(some);
    }
    b.beq(nvalid, zero, nothing);  // no pair chose a valid expert: y is not written
    X na = nactive;  // listed in talist by the sort (described again: it borrows tglist)
    emit_tdesc_at(b, talist, l1_alist, experts, one, JAL_DT_I32);
    X np = nvalid;
    emit_tdesc_at(b, tgidx, l1_glist, np, one, JAL_DT_I32);
    if (c.combine) issue_combine_loads();
    if (!p.token_rows && !c.recv_input) gather_x(np);
    if (c.bias) gather_bias_rows(np);
    emit_tdesc_at(b, tacc, l1_acc, np, ncols, JAL_DT_F32, p.tn * 4);
    b.vfill(tacc, 0.0f);
    X per_tile = b.x(), tiles = b.x(), tn = emit_const(b, p.tn);
    b.divu(per_tile, tn, ncols);  // ≥ 1: ncols ≤ tn here
    b.free(tn);
    b.add(tiles, na, per_tile);
    b.addi(tiles, tiles, -1);
    b.divu(tiles, tiles, per_tile);
    bool first = true;  // tile 0's load, the one a w0_prefetched kernel finds issued
    emit_double_buffered(
        b, tiles,
        [&](X j, int buf) {
            stream_load(j, buf, na, per_tile, first && c.w0_prefetched);
            first = false;
        },
        [&](X j, int buf) {
            if (c.prefetch_n) {  // the last tile: every load of this kernel is issued
                Label not_last = b.label();
                X t = b.x();
                b.addi(t, j, 1);
                b.bne(t, tiles, not_last);
                b.free(t);
                issue_next_w(na, tw[1 - buf]);
                b.bind(not_last);
            }
            stream_body(j, buf, na, per_tile);
        },
        [&] {
            // The first W tile is in flight (prefetched: on its way since the stage before
            // ended): the next stage's reads.
            b.readahead_slot();
            if (p.token_rows) {
                prepare_token_rows();
                return;
            }
            if (c.recv_input) {
                receive_x(np);  // while the first W tiles load
            } else {
                b.wait(qio, 1);  // the activations, while the first W tile loads
            }
            prepare_x(np);
            if (p.convert) {
                emit_tdesc_at(b, ta, l1_a, np, kdim, p.act);
                b.vcvt(ta, tx, activation_cvt_mode(c.numerics));
            }
        });
    b.free(tiles);
    b.free(per_tile);
    b.free(na);
    stream_finish();
    b.bind(nothing);
}

}  // namespace jal::kernels::linear::detail
