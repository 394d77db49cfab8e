// The expert GEMM's per-expert loop (expert_gemm_kernel.hpp): per chunk of an expert's
// pairs, gather (staged and converted), multiply by the expert's W tiles, bias, the SwiGLU
// and the conversion of y when asked for, and the scatter of each row to its pair.
#include <limits>

#include <jal/isa/numerics.hpp>

#include "expert_gemm_kernel.hpp"
#include "norm_rows.hpp"
#include "swiglu_rows.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear::detail {

// The fused norm of `rows` gathered F32 rows in tx, in place (the weight's load waited for
// once before). Scratch tiles borrow tsub and tgidx, free between a gather and the MMA.
void ExpertGemmKernel::norm_rows(X rows)
{
    emit_tdesc_at(b, tsub, l1_sq, rows, kdim, JAL_DT_F32);
    emit_tdesc_at(b, tgidx, l1_sc, rows, one, JAL_DT_F32);
    emit_rms_norm_rows(b, tx, tsub, tgidx, tnw, c.kdim, c.norm_eps);
}

void ExpertGemmKernel::load_bias(X e)
{
    emit_tdesc_at(b, tbias, l1_bias, one, ncols, JAL_DT_F32);
    X a = b.x();
    b.muli(a, e, static_cast<int32_t>(c.n * 4));
    b.add(a, a, bias);
    X off = b.x();
    b.muli(off, col0, 4);
    b.add(a, a, off);
    b.free(off);
    b.tload(tbias, a, four, qio);
    b.wait(qio, 1);
    b.free(a);
}

// rows of W tile i: min(tn, ncols − i·tn), into a new register.
X ExpertGemmKernel::tile_rows(X i)
{
    X t = emit_const(b, p.tn);
    X r = emit_block_size(b, i, ncols, t);
    b.free(t);
    return r;
}

// W tile i of the expert (w_exp) into buffer buf, signalling qw[buf].
void ExpertGemmKernel::load_w_tile(X i, int buf)
{
    X r = tile_rows(i);
    emit_tdesc_at(b, tw[buf], l1_w[buf], r, kdim, c.weight);
    X a = b.x();
    b.muli(a, i, static_cast<int32_t>(p.tn));
    b.mul(a, a, w_stride);
    b.add(a, a, w_exp);
    b.tload(tw[buf], a, w_stride, qw[buf], true);
    b.free(a);
    b.free(r);
}

// The chunk's rows of the accumulator: ta times the slice's rows of the expert, in tiles
// of tn through two buffers (tiles 0 and 1 already loading when `preloaded` reads nonzero).
void ExpertGemmKernel::multiply(X rows)
{
    X tiles = b.x(), tn = emit_const(b, p.tn);
    emit_ceil_div(b, tiles, ncols, tn, p.tn);
    b.free(tn);
    emit_double_buffered(
        b, tiles,
        [&](X i, int buf) {
            if (!preloaded.r) return load_w_tile(i, buf);
            Label go = b.label(), skip = b.label();
            b.beq(preloaded, zero, go);
            X two = emit_const(b, 2);
            b.blt(i, two, skip);
            b.free(two);
            b.bind(go);
            load_w_tile(i, buf);
            b.bind(skip);
        },
        [&](X i, int buf) {
            b.wait(qw[buf], 1);
            X r = tile_rows(i);
            X a = b.x();
            b.muli(a, i, static_cast<int32_t>(p.tn * 4));
            b.addi(a, a, static_cast<int32_t>(l1_acc));
            b.tdesc(tsub, a, rows, r, JAL_DT_F32, c.n * 4);
            b.free(a);
            b.mma(tsub, ta, tw[buf]);
            b.free(r);
        });
    b.free(tiles);
}

// Row acc_row of the accumulator (rows acc_stride bytes apart) to the row of y of the pair
// at position `slot` of the sorted lists (the slice's columns of it).
void ExpertGemmKernel::store_row(X slot, X acc_row, uint32_t acc_stride)
{
    X dst = b.x(), a = b.x();
    b.tread(dst, tplist, slot, 0);
    b.mul(dst, dst, y_stride);
    b.add(dst, dst, y);
    if (c.swiglu && by_rows) {  // the slice's h columns of the N/2 outputs, from col0/2
        X two = emit_const(b, 2);
        b.divu(a, col0, two);
        b.free(two);
        b.muli(a, a, 4);
    } else {
        b.muli(a, col0, 4);
    }
    b.add(dst, dst, a);
    b.muli(a, acc_row, static_cast<int32_t>(acc_stride));
    b.addi(a, a, static_cast<int32_t>(l1_acc));
    if (p.yrow) {  // the converted row
        b.muli(a, acc_row, static_cast<int32_t>(p.yrow));
        b.addi(a, a, static_cast<int32_t>(l1_y));
        X cols = emit_const(b, c.out_cols());
        b.tdesc(tsub, a, one, cols, c.y_dtype);
        b.free(cols);
    } else if (c.swiglu) {  // the gate half now holds the output
        X half = by_rows ? halved(ncols) : emit_const(b, c.n / 2);
        b.tdesc(tsub, a, one, half, JAL_DT_F32);
        b.free(half);
    } else {
        b.tdesc(tsub, a, one, ncols, JAL_DT_F32);
    }
    b.tstore(tsub, dst, y_stride, qst);
    b.free(a);
    b.free(dst);
}

// Each row of the accumulator to its pair's row of y (the slice's columns of it); the
// chunk's pairs are at positions [base, base + rows) of the sorted lists.
void ExpertGemmKernel::scatter(X base, X rows)
{
    b.for_range(zero, rows, 1, [&](X r) {
        X slot = b.x();
        b.add(slot, r, base);
        store_row(slot, r, c.n * 4);
        b.free(slot);
    });
}

// Gathers block j (kStageRows rows from row j·kStageRows of the chunk at c0, fewer at the
// end) of the chunk's F32 rows into staging buffer buf (signal on qw[buf]: the W buffers'
// semaphores, idle until the chunk's multiply).
void ExpertGemmKernel::stage_block(X c0, X rows, X j, int buf)
{
    X r0 = b.x(), nb = b.x(), a = b.x();
    block_bounds(j, rows, r0, nb, a);
    block_ids(c0, r0, nb, a);
    emit_tdesc_at(b, tx, l1_x + buf * kStageRows * c.kdim * 4, nb, kdim, JAL_DT_F32);
    b.tgather(tx, x, x_stride, tgidx, qw[buf]);
    b.free(a);
    b.free(nb);
    b.free(r0);
}

// Block j of a chunk's `rows` (kStageRows rows a block, fewer at the end): its first row r0
// and its row count nb (a: scratch).
void ExpertGemmKernel::block_bounds(X j, X rows, X r0, X nb, X a)
{
    b.muli(r0, j, kStageRows);
    b.sub(nb, rows, r0);
    b.li(a, kStageRows);
    b.min(nb, nb, a);
}

// tgidx over the gather list's entries of that block of the chunk at c0 (a: scratch).
void ExpertGemmKernel::block_ids(X c0, X r0, X nb, X a)
{
    b.add(a, c0, first);
    b.add(a, a, r0);
    b.muli(a, a, 4);
    b.addi(a, a, static_cast<int32_t>(l1_glist));
    b.tdesc(tgidx, a, nb, one, JAL_DT_I32);
}

// The nb F32 rows in tx (rows r0.. of the chunk): the fused norm, then converted into their
// rows of ta (a: scratch). Shared by the staged gathers, pipelined or not.
void ExpertGemmKernel::convert_block(X r0, X nb, X a)
{
    if (c.rms_norm) norm_rows(nb);
    b.muli(a, r0, static_cast<int32_t>(p.arow));
    b.addi(a, a, static_cast<int32_t>(l1_a));
    b.tdesc(ta, a, nb, kdim, p.act);
    b.vcvt(ta, tx, activation_cvt_mode(c.numerics));
}

// The chunk's rows into ta: gathered kStageRows at a time through two staging buffers
// (the next block's gather in flight while this one is normed and converted), each block
// converted into its rows of ta. Row by row the arithmetic of the unstaged path.
void ExpertGemmKernel::gather_staged(X c0, X rows)
{
    X blocks = b.x(), t = emit_const(b, kStageRows);
    emit_ceil_div(b, blocks, rows, t, kStageRows);
    b.free(t);
    emit_double_buffered(
        b, blocks, [&](X j, int buf) { stage_block(c0, rows, j, buf); },
        [&](X j, int buf) {
            b.wait(qw[buf], 1);
            X r0 = b.x(), nb = b.x(), a = b.x();
            block_bounds(j, rows, r0, nb, a);
            emit_tdesc_at(b, tx, l1_x + buf * kStageRows * c.kdim * 4, nb, kdim, JAL_DT_F32);
            convert_block(r0, nb, a);
            b.free(a);
            b.free(nb);
            b.free(r0);
        });
    b.free(blocks);
    emit_tdesc_at(b, ta, l1_a, rows, kdim, p.act);
}

// The SwiGLU of the accumulator's rows in place, kStageRows at a time: gate (columns
// [0, N/2)) becomes the output, up (the rest) and a small σ buffer are scratch; the
// instructions (and so the bits) of swiglu_oai. Tiles free after the multiply are borrowed.
void ExpertGemmKernel::swiglu_rows(X rows)
{
    const uint32_t F = c.n / 2;
    const T tg = tsub, tu = tx, tt = tbias;  // (ta may be tx)
    b.for_range(zero, rows, static_cast<int32_t>(kStageRows), [&](X r0) {
        X nb = b.x(), a = b.x(), half = emit_const(b, F);
        b.sub(nb, rows, r0);
        b.li(a, kStageRows);
        b.min(nb, nb, a);
        b.muli(a, r0, static_cast<int32_t>(c.n * 4));
        b.addi(a, a, static_cast<int32_t>(l1_acc));
        b.tdesc(tg, a, nb, half, JAL_DT_F32, c.n * 4);
        b.addi(a, a, static_cast<int32_t>(F * 4));
        b.tdesc(tu, a, nb, half, JAL_DT_F32, c.n * 4);
        emit_tdesc_at(b, tt, l1_glu, nb, half, JAL_DT_F32);
        b.free(half);
        b.free(a);
        b.free(nb);
        const SwigluBounds bounds = emit_swiglu_bounds(b, c.swiglu_limit);
        emit_swiglu_rows(b, tg, tu, tt, bounds, c.swiglu_alpha);
        free_swiglu_bounds(b, bounds);
    });
}

// Gathers `rows` rows of x (the pairs tgidx lists) into L1: into tx, or with the fused
// SwiGLU their gate | up rows into the gather buffer.
void ExpertGemmKernel::gather_x(X rows)
{
    X cols = emit_const(b, c.swiglu_input ? 2 * c.kdim : c.kdim);
    emit_tdesc_at(b, tx, c.swiglu_input ? l1_gu : l1_x, rows, cols, c.x_dtype);
    b.free(cols);
    b.tgather(tx, x, x_stride, tgidx, qio);
}

// After the gather has landed: the fused norm, or the SwiGLU of the gate and up halves
// into tx (rows × K F32, packed like a plain gather), ready to convert. The halves and the
// scratch borrow tgidx and tsub (free between a gather and the MMA).
void ExpertGemmKernel::prepare_x(X rows)
{
    if (c.rms_norm) norm_rows(rows);
    if (!c.swiglu_input) return;
    const uint32_t stride = 2 * c.kdim * 4;
    emit_tdesc_at(b, tx, l1_x, rows, kdim, JAL_DT_F32);
    emit_tdesc_at(b, tgidx, l1_gu, rows, kdim, JAL_DT_F32, stride);
    b.vcopy(tx, tgidx);  // the gate half
    emit_tdesc_at(b, tsub, l1_gu + c.kdim * 4, rows, kdim, JAL_DT_F32, stride);
    emit_tdesc_at(b, tgidx, l1_sw, rows, kdim, JAL_DT_F32);
    const SwigluBounds r = emit_swiglu_bounds(b, c.swiglu_limit);
    emit_swiglu_rows(b, tx, tsub, tgidx, r, c.swiglu_alpha);
    free_swiglu_bounds(b, r);
}

// Pairs [c0, c0 + min(mc, cnt − c0)) of the expert: gather, convert, multiply, scatter.
void ExpertGemmKernel::chunk(X c0, X mc_reg)
{
    X rows = b.x();
    b.sub(rows, cnt, c0);
    b.min(rows, rows, mc_reg);
    {
        X a = b.x();
        b.add(a, c0, first);
        b.muli(a, a, 4);
        b.addi(a, a, static_cast<int32_t>(l1_glist));
        b.tdesc(tgidx, a, rows, one, JAL_DT_I32);
        b.free(a);
    }
    if (p.staged) {
        gather_staged(c0, rows);
    } else {
        gather_x(rows);
        b.wait(qio, 1);
        prepare_x(rows);
        if (p.convert) {
            emit_tdesc_at(b, ta, l1_a, rows, kdim, p.act);
            b.vcvt(ta, tx, activation_cvt_mode(c.numerics));
        }
    }
    emit_tdesc_at(b, tacc, l1_acc, rows, ncols, JAL_DT_F32, c.n * 4);
    b.vfill(tacc, 0.0f);
    multiply(rows);
    epilogue(rows);
    X base = b.x();
    b.add(base, c0, first);
    scatter(base, rows);
    b.free(base);
    b.free(rows);
}

// After the multiply, on the vector engine: the bias, the SwiGLU and the conversion of y
// (the bias row loaded before).
void ExpertGemmKernel::epilogue(X rows)
{
    if (c.bias) {
        // The previous chunk's SwiGLU borrowed tbias: the bias row (its L1 untouched) again.
        if (c.swiglu) emit_tdesc_at(b, tbias, l1_bias, one, ncols, JAL_DT_F32);
        b.vadd(tacc, tacc, tbias);
    }
    if (c.swiglu) swiglu_rows(rows);
    if (p.yrow) {  // the rows converted at once (the accumulator's rows are c.n apart)
        X cols = emit_const(b, c.out_cols());
        emit_tdesc_at(b, tsub, l1_acc, rows, cols, JAL_DT_F32, c.n * 4);
        emit_tdesc_at(b, tx, l1_y, rows, cols, c.y_dtype);
        b.vcvt(tx, tsub, activation_cvt_mode(c.numerics));
        b.free(cols);
    }
}

// first and cnt of expert e: its pairs' place in the sorted lists.
void ExpertGemmKernel::expert_pairs(X e)
{
    b.tread(first, tstart, e, 0);
    b.tread(cnt, tcount, e, 0);
    b.sub(cnt, cnt, first);
    if (!by_rows && uniform_active(c) == c.experts) {
        // Timing only, the ids read as zeros and so do the counts: when uniform routing
        // makes every expert active (a prompt), expert e takes the e-th even share of the
        // pairs, as a real run with those ids does (linear_expert_timing_test). With fewer
        // active experts the runtime charges a stand-in instead (docs/model-runtime.md).
        Label real = b.label();
        X t0 = b.x(), t1 = b.x();
        b.movsr(t0, JAL_SR_TIMING_ONLY);
        b.beq(t0, zero, real);
        even_share(e, experts, first, cnt, t0, t1);
        b.bind(real);
        b.free(t1);
        b.free(t0);
    }
}

// Experts e in [e, e_end), w_exp (starting as w) at each one's first row of the slice's W.
void ExpertGemmKernel::expert_loop(X e, X e_end, X w, X e_stride)
{
    w_exp = w, first = b.x(), cnt = b.x();
    Label next_expert = b.label(), top = b.label(), all_done = b.label();
    b.bind(top);
    b.bge(e, e_end, all_done);
    expert_pairs(e);
    b.beq(cnt, zero, next_expert);
    if (c.bias) load_bias(e);
    // Chunks of at most mc pairs.
    X mc_reg = emit_const(b, p.mc);
    b.for_range(zero, cnt, static_cast<int32_t>(p.mc), [&](X c0) { chunk(c0, mc_reg); });
    b.free(mc_reg);
    b.bind(next_expert);
    b.addi(e, e, 1);
    b.add(w_exp, w_exp, e_stride);
    b.jmp(top);
    b.bind(all_done);
}

}  // namespace jal::kernels::linear::detail
