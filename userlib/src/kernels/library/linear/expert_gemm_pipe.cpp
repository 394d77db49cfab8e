// The expert GEMM's per-expert loop with the next chunk's gather in flight (split by experts,
// ExpertPlan::prefetch): the next chunk's gather (the same expert's next pairs, or the next
// expert with pairs) is issued right after this chunk's multiply, before its epilogue and
// scatter. The DMA engine, in issue order, then fetches the rows while the MMA finishes and
// the vector engine runs the epilogue, instead of after the scatter's stores (which wait for
// the epilogue). Staged, a chunk's F32 rows all have their place in L1; x gathered as the
// MMA reads it alternates between two buffers (xbuf). The instructions that touch data are
// those of the per-chunk loop, in another order: the same bits.
#include "expert_gemm_kernel.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear::detail {

// Experts from e on with no pairs are skipped (w_exp following); first and cnt are then
// those of expert e, unless e reached e_end.
void ExpertGemmKernel::seek_expert(X e, X e_end, X e_stride)
{
    Label top = b.label(), found = b.label();
    b.bind(top);
    b.bge(e, e_end, found);
    expert_pairs(e);
    b.bne(cnt, zero, found);
    b.addi(e, e, 1);
    b.add(w_exp, w_exp, e_stride);
    b.jmp(top);
    b.bind(found);
}

// Pairs [c0, c0 + rows) of the expert (first): staged, their F32 rows into l1_x, kStageRows
// a TGATHER, each signalling qg, with no wait (every row has its own place); else one
// TGATHER into the chunk's buffer (xbuf).
void ExpertGemmKernel::gather_issue(X c0, X rows)
{
    if (!p.staged) {
        X a = b.x();
        b.add(a, c0, first);
        b.muli(a, a, 4);
        b.addi(a, a, static_cast<int32_t>(l1_glist));
        b.tdesc(tgidx, a, rows, one, JAL_DT_I32);
        b.free(a);
        b.tdesc(tx, xbuf, rows, kdim, c.x_dtype);
        b.tgather(tx, x, x_stride, tgidx, qg);
        return;
    }
    X blocks = b.x(), t = emit_const(b, kStageRows);
    emit_ceil_div(b, blocks, rows, t, kStageRows);
    b.free(t);
    b.for_range(zero, blocks, 1, [&](X j) {
        X r0 = b.x(), nb = b.x(), a = b.x();
        block_bounds(j, rows, r0, nb, a);
        block_ids(c0, r0, nb, a);
        b.muli(a, r0, static_cast<int32_t>(p.xrow));
        b.addi(a, a, static_cast<int32_t>(l1_x));
        b.tdesc(tx, a, nb, kdim, JAL_DT_F32);
        b.tgather(tx, x, x_stride, tgidx, qg);
        b.free(a);
        b.free(nb);
        b.free(r0);
    });
    b.free(blocks);
}

// The gathered rows into ta, block by block as they land: the fused norm and the
// conversion of gather_staged.
void ExpertGemmKernel::gather_finish(X rows)
{
    if (!p.staged) {
        b.wait(qg, 1);
        b.tdesc(tx, xbuf, rows, kdim, c.x_dtype);
        return;
    }
    X blocks = b.x(), t = emit_const(b, kStageRows);
    emit_ceil_div(b, blocks, rows, t, kStageRows);
    b.free(t);
    b.for_range(zero, blocks, 1, [&](X j) {
        b.wait(qg, 1);
        X r0 = b.x(), nb = b.x(), a = b.x();
        block_bounds(j, rows, r0, nb, a);
        b.muli(a, r0, static_cast<int32_t>(p.xrow));
        b.addi(a, a, static_cast<int32_t>(l1_x));
        b.tdesc(tx, a, nb, kdim, JAL_DT_F32);
        convert_block(r0, nb, a);
        b.free(a);
        b.free(nb);
        b.free(r0);
    });
    b.free(blocks);
    emit_tdesc_at(b, ta, l1_a, rows, kdim, p.act);
}

// Experts [e, e_end) in chunks of at most mc pairs, w_exp (starting as w) at each one's
// first row of the slice's W: per chunk finish its gather, multiply, load the expert's bias
// (its first chunk), issue the next chunk's gather, the epilogue, scatter (the gather
// issued before the epilogue measured a little faster than after it).
void ExpertGemmKernel::pipelined_loop(X e, X e_end, X w, X e_stride)
{
    w_exp = w, first = b.x(), cnt = b.x();
    X c0 = emit_const(b, 0), rows = b.x(), mc_reg = emit_const(b, p.mc);
    if (!p.staged) xbuf = emit_const(b, l1_x);
    Label top = b.label(), done = b.label();
    seek_expert(e, e_end, e_stride);
    b.bge(e, e_end, done);
    b.sub(rows, cnt, c0);
    b.min(rows, rows, mc_reg);
    gather_issue(c0, rows);
    // The first chunk's first two W tiles load behind its gather, not after its conversion.
    // (Loading the next chunk's likewise, before the stores, was slower.)
    preloaded = emit_const(b, 1);
    load_w_tile(zero, 0);
    if (c.n > p.tn) load_w_tile(one, 1);  // split by experts: ncols is N
    b.bind(top);
    gather_finish(rows);
    emit_tdesc_at(b, tacc, l1_acc, rows, ncols, JAL_DT_F32, c.n * 4);
    b.vfill(tacc, 0.0f);
    multiply(rows);
    b.li(preloaded, 0);
    if (c.bias) {  // after the multiply: the W tiles' loads are not queued behind it
        Label loaded = b.label();
        b.bne(c0, zero, loaded);
        load_bias(e);
        b.bind(loaded);
    }
    X base = b.x(), next = b.x();
    b.add(base, c0, first);
    // The next chunk: the expert's next pairs, or the next expert's first.
    Label same = b.label(), none = b.label();
    b.add(c0, c0, mc_reg);
    b.blt(c0, cnt, same);
    b.li(c0, 0);
    b.addi(e, e, 1);
    b.add(w_exp, w_exp, e_stride);
    seek_expert(e, e_end, e_stride);
    b.bind(same);
    b.li(next, 0);
    b.bge(e, e_end, none);
    b.sub(next, cnt, c0);
    b.min(next, next, mc_reg);
    if (!p.staged) {  // the other buffer (this chunk's last MMAs still read this one)
        X t = emit_const(b, l1_x + l1_x2);
        b.sub(xbuf, t, xbuf);
        b.free(t);
    }
    gather_issue(c0, next);
    b.bind(none);
    epilogue(rows);
    scatter(base, rows);
    b.mov(rows, next);
    b.free(next);
    b.free(base);
    b.blt(e, e_end, top);
    b.bind(done);
    if (!p.staged) b.free(xbuf);
    b.free(preloaded);
    preloaded = X{};
    b.free(mc_reg);
    b.free(rows);
    b.free(c0);
}

}  // namespace jal::kernels::linear::detail
