// kv_append_emit.cpp: kv_append's instruction sequences (kv_append_emit.hpp).
#include "kv_append_emit.hpp"

#include <utility>

#include "rope_rotate.hpp"
#include "row_blocks.hpp"

namespace jal::kernels::transformer_detail {

// The D x D identity at l1_id: zeros, then the diagonal as a column whose rows are D+1
// elements apart.
void emit_identity(Builder& b, const KvAppendRegs& r, uint32_t l1_id)
{
    X one = constant(b, 1);
    b.li(r.l1, l1_id);
    b.tdesc(r.tid, r.l1, r.dim, r.dim, JAL_DT_F32);
    b.vfill(r.tid, 0.0f);
    b.tdesc(r.tk, r.l1, r.dim, one, JAL_DT_F32, (r.head_dim + 1) * 4);
    b.vfill(r.tk, 1.0f);
    b.free(one);
}

void gather_rope_rows(Builder& b, const KvAppendRope& r, X pos, X n, X l1, Q q, int also, bool wait)
{
    const X one = r.one;
    // The positions as one I32 row counted up from pos, then viewed as the column of
    // indices TGATHER takes: the same bytes (as the rope kernel does).
    b.li(l1, r.l1_idx);
    b.tdesc(r.tidx, l1, one, n, JAL_DT_I32);
    b.viota(r.tidx, pos, one);
    b.tdesc(r.tidx, l1, n, one, JAL_DT_I32);
    b.li(l1, r.l1_c);
    b.tdesc(r.tc, l1, n, r.half, JAL_DT_F32);
    b.li(l1, r.l1_s);
    b.tdesc(r.ts, l1, n, r.half, JAL_DT_F32);
    for (const auto& [t, name] : {std::pair{r.tc, "cos"}, std::pair{r.ts, "sin"}}) {
        X table = b.arg_again(name);
        b.tgather(t, table, r.table_row, r.tidx, q);
        b.free(table);
    }
    b.li(l1, r.l1_a);
    b.tdesc(r.ta, l1, n, r.half, JAL_DT_F32);
    b.li(l1, r.l1_b);
    b.tdesc(r.tb, l1, n, r.half, JAL_DT_F32);
    if (wait) b.wait(q, 2 + also);
}

void rotate_head_rows(Builder& b, const KvAppendRope& r, X l1, X n, uint32_t head_dim,
                      uint32_t row_bytes)
{
    b.tdesc(r.x0, l1, n, r.half, JAL_DT_F32, row_bytes);
    b.addi(l1, l1, static_cast<int32_t>(head_dim / 2 * 4));
    b.tdesc(r.x1, l1, n, r.half, JAL_DT_F32, row_bytes);
    emit_rope_pair(b, r.x0, r.x1, r.tc, r.ts, r.ta, r.tb);
}

void store_rows(Builder& b, const KvAppendRegs& r, X pos, X n, X kc, X vc, X addr,
                const std::function<void(uint32_t block)>& at)
{
    const int32_t e = r.kv_dtype == JAL_DT_F16 ? 2 : 4;
    b.muli(addr, pos, static_cast<int32_t>(r.head_dim) * e);
    b.add(addr, addr, kc);
    // F16: the keys rounded in place (tvt, free until V^T, describes the narrower rows)
    const bool half = r.kv_dtype != JAL_DT_F32;
    const T kst = half ? r.tvt : r.tk;
    if (half) {
        at(r.l1_k);
        b.tdesc(kst, r.l1, n, r.dim, r.kv_dtype);
        b.vcvt(kst, r.tk, JAL_CVT_OCP);
    }
    b.tstore(kst, addr, r.key_bytes, r.qst);

    // V^T (D x n) = I (D x D) x V^T: V (n rows of D) is the weight-layout operand.
    at(r.l1_vt);
    b.tdesc(r.tvt, r.l1, r.dim, n, JAL_DT_F32);
    b.vfill(r.tvt, 0.0f);
    b.mma(r.tvt, r.tid, r.tv);
    // F16: V^T rounded in place (tk's keys are out: their store reads the L1 at l1_k)
    const T vst = half ? r.tk : r.tvt;
    if (half) {
        b.tdesc(vst, r.l1, r.dim, n, r.kv_dtype);
        b.vcvt(vst, r.tvt, JAL_CVT_OCP);
    }
    b.muli(addr, pos, e);
    b.add(addr, addr, vc);
    b.tstore(vst, addr, r.ctx_bytes, r.qst);
}

// Rows [row0, row0 + n) of one head (its columns start `col` bytes into a row of k and v)
// into its caches (the head table's two words at `entry`).
void append_block(Builder& b, const KvAppendRegs& r, X entry, X col, X row0, X n)
{
    const uint32_t D = r.head_dim;
    X addr = b.x(), pos = b.x();
    b.li(r.l1, r.l1_k);
    b.tdesc(r.tk, r.l1, n, r.dim, JAL_DT_F32);
    row_address(b, addr, row0, r.k, r.k_stride);
    b.add(addr, addr, col);
    b.tload(r.tk, addr, r.k_stride, r.q);
    b.li(r.l1, r.l1_v);
    b.tdesc(r.tv, r.l1, n, r.dim, JAL_DT_F32);
    row_address(b, addr, row0, r.v, r.v_stride);
    b.add(addr, addr, col);
    b.tload(r.tv, addr, r.v_stride, r.q);

    b.add(pos, r.pos0, row0);
    // the keys' two halves are rotated by their positions' rows of the tables
    if (r.rope) gather_rope_rows(b, *r.rope, pos, n, r.l1, r.q, 2, false);
    X kc = b.x(), vc = b.x();
    b.ld(kc, entry, 0);
    b.ld(vc, entry, 8);
    b.wait(r.q, r.rope ? 4 : 2);  // k, v (and the tables' rows)
    if (r.rope) {
        b.li(r.l1, r.l1_k);
        rotate_head_rows(b, *r.rope, r.l1, n, D, D * 4);
    }
    store_rows(b, r, pos, n, kc, vc, addr, [&](uint32_t block) { b.li(r.l1, block); });
    for (X x : {vc, kc, pos, addr}) b.free(x);
}

}  // namespace jal::kernels::transformer_detail
