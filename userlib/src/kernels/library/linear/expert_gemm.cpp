// Grouped expert GEMM (expert_gemm.hpp): per owned expert, the pairs that chose it are
// gathered, multiplied by the expert's weights streamed through two buffers, and scattered
// back to their rows of y.
#include <jal/kernels/library/expert_gemm.hpp>

#include <algorithm>

#include <jal/error.hpp>
#include <jal/isa/numerics.hpp>

#include "emit.hpp"

namespace jal::kernels::linear {

using namespace detail;

namespace {
constexpr uint32_t kL1 = JAL_SLICE_L1_BYTES;
constexpr uint32_t kWeightBudget = 1u << 20;
}  // namespace

std::string expert_gemm_name(const ExpertGemmConfig& c)
{
    std::string name =
        "expert_gemm_dt" + std::to_string(c.weight) + "_" + numerics_name(c.numerics) + "_t" +
        std::to_string(c.tokens) + "k" + std::to_string(c.k) + "e" + std::to_string(c.experts) +
        "n" + std::to_string(c.n) + "k" + std::to_string(c.kdim) + (c.input_per_pair ? "_pp" : "");
    return name.substr(0, 63);
}

uint64_t expert_gemm_flops(const ExpertGemmConfig& c)
{
    uint64_t pairs = uint64_t{c.tokens} * c.k;
    return pairs * (2ull * c.n * c.kdim + (c.bias ? c.n : 0));
}

CodeObject build_expert_gemm(const ExpertGemmConfig& c)
{
    const std::string name = expert_gemm_name(c);
    const uint32_t pairs = c.tokens * c.k;
    const jal_dtype act = activation_dtype(c.weight, c.numerics);
    const uint64_t wrow = numerics::row_bytes(c.weight, c.kdim);
    const uint64_t arow = numerics::row_bytes(act, c.kdim);
    if (c.tokens == 0 || c.k == 0 || c.experts == 0 || c.n == 0 || c.kdim == 0 || wrow == 0 ||
        arow == 0 || pairs > 8192 || c.experts > 0x7fffffffu)
        throw Error(JAL_STATUS_INVALID_FIELD, name + ": bad shape or format (at most 8192 pairs)");
    const bool convert = act != JAL_DT_F32;
    // W tiles: tn rows of all K, two buffers.
    uint32_t tn = static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>(1, kWeightBudget / 2 / wrow), 256));
    tn = std::min(tn, c.n);
    // L1: ids, two pair lists, the W buffers, the bias row, then per pair row: x (F32), its
    // conversion, and the accumulator of N columns.
    const uint64_t fixed =
        3 * (uint64_t{pairs} * 4 + 64) + 2 * (tn * wrow + 64) + (uint64_t{c.n} * 4 + 64) + 256;
    const uint64_t per_row = uint64_t{c.kdim} * 4 + (convert ? arow : 0) + uint64_t{c.n} * 4;
    if (fixed + per_row > kL1) throw Error(JAL_STATUS_INVALID_FIELD, name + ": does not fit in L1");
    const uint32_t mc = static_cast<uint32_t>(std::min<uint64_t>(pairs, (kL1 - fixed) / per_row));

    Builder b(name);
    X x = b.arg("x", JAL_ARG_ADDRESS);
    X x_stride = b.arg("x_stride");
    X ids = b.arg("ids", JAL_ARG_ADDRESS);
    X w_shards = b.arg("w_shards", JAL_ARG_ADDRESS);
    X w_stride = b.arg("w_stride");
    X expert_stride = b.arg("expert_stride");
    X bias{};
    if (c.bias) bias = b.arg("bias", JAL_ARG_ADDRESS);
    X y = b.arg("y", JAL_ARG_ADDRESS);
    X y_stride = b.arg("y_stride");

    SliceShare share = emit_slice_range(b, c.experts);
    Label done = b.label();
    b.beq(share.count, zero, done);
    X w = emit_table_entry(b, w_shards, share.slice);
    b.free(w_shards);
    b.free(share.slice);

    const uint32_t l1_ids = b.l1_alloc(pairs * 4), l1_plist = b.l1_alloc(pairs * 4),
                   l1_glist = b.l1_alloc(pairs * 4);
    const uint32_t l1_w[2] = {b.l1_alloc(static_cast<uint32_t>(tn * wrow)),
                              b.l1_alloc(static_cast<uint32_t>(tn * wrow))};
    const uint32_t l1_bias = b.l1_alloc(c.n * 4);
    const uint32_t l1_x = b.l1_alloc(mc * c.kdim * 4);
    const uint32_t l1_a = convert ? b.l1_alloc(static_cast<uint32_t>(mc * arow)) : l1_x;
    const uint32_t l1_acc = b.l1_alloc(mc * c.n * 4);
    T tids = b.t(), tplist = b.t(), tglist = b.t(), tgidx = b.t(), tx = b.t(),
      ta = convert ? b.t() : tx;
    T tw[2] = {b.t(), b.t()}, tbias = b.t(), tacc = b.t(), tsub = b.t();
    Q qio = b.q(), qw[2] = {b.q(), b.q()}, qst = b.q();

    auto describe = [&](T t, uint32_t l1, X rows, X cols, jal_dtype dt, uint32_t stride = 0) {
        X a = emit_const(b, l1);
        b.tdesc(t, a, rows, cols, dt, stride);
        b.free(a);
    };
    X one = emit_const(b, 1);
    X four = emit_const(b, 4);
    X kdim = emit_const(b, c.kdim);
    X stores = emit_const(b, 0);
    {  // every pair's expert id
        X np = emit_const(b, pairs);
        describe(tids, l1_ids, np, one, JAL_DT_I32);
        describe(tplist, l1_plist, np, one, JAL_DT_I32);
        describe(tglist, l1_glist, np, one, JAL_DT_I32);
        b.tload(tids, ids, four, qio);
        b.wait(qio, 1);
        b.free(np);
    }
    X e_end = b.x();
    b.add(e_end, share.begin, share.count);
    b.free(share.count);
    X e = share.begin;
    X w_exp = b.x(), cnt = b.x();
    Label next_expert = b.label(), top = b.label(), all_done = b.label();
    b.mov(w_exp, w);
    b.free(w);
    b.bind(top);
    b.bge(e, e_end, all_done);
    {
        // The pairs that chose e: their position p (row of y) and the row of x to gather.
        b.li(cnt, 0);
        X np = emit_const(b, pairs);
        b.for_range(zero, np, 1, [&](X p) {
            X id = b.x();
            Label skip = b.label();
            b.tread(id, tids, p, 0);
            b.bne(id, e, skip);
            b.twrite(p, tplist, cnt, 0);
            if (c.input_per_pair) {
                b.twrite(p, tglist, cnt, 0);
            } else {
                X kk = emit_const(b, c.k);
                b.divu(id, p, kk);
                b.free(kk);
                b.twrite(id, tglist, cnt, 0);
            }
            b.addi(cnt, cnt, 1);
            b.bind(skip);
            b.free(id);
        });
        b.free(np);
        b.beq(cnt, zero, next_expert);
        if (c.bias) {
            X nreg = emit_const(b, c.n);
            describe(tbias, l1_bias, one, nreg, JAL_DT_F32);
            X a = b.x();
            b.muli(a, e, static_cast<int32_t>(c.n * 4));
            b.add(a, a, bias);
            b.tload(tbias, a, four, qio);
            b.wait(qio, 1);
            b.free(a);
            b.free(nreg);
        }
        // Chunks of at most mc pairs.
        X mc_reg = emit_const(b, mc);
        b.for_range(zero, cnt, static_cast<int32_t>(mc), [&](X c0) {
            X rows = b.x();
            b.sub(rows, cnt, c0);
            b.min(rows, rows, mc_reg);
            {
                X a = b.x();
                b.muli(a, c0, 4);
                b.addi(a, a, static_cast<int32_t>(l1_glist));
                b.tdesc(tgidx, a, rows, one, JAL_DT_I32);
                b.free(a);
            }
            describe(tx, l1_x, rows, kdim, JAL_DT_F32);
            b.tgather(tx, x, x_stride, tgidx, qio);
            b.wait(qio, 1);
            if (convert) {
                describe(ta, l1_a, rows, kdim, act);
                b.vcvt(ta, tx, activation_cvt_mode(c.numerics));
            }
            X nreg = emit_const(b, c.n);
            describe(tacc, l1_acc, rows, nreg, JAL_DT_F32);
            b.free(nreg);
            b.vfill(tacc, 0.0f);
            // The expert's rows in tiles of tn through two buffers.
            X tiles = emit_const(b, ceil_div(c.n, tn));
            auto tile_rows = [&](X i) {
                X r = b.x(), t = emit_const(b, tn), nn = emit_const(b, c.n);
                b.mul(r, i, t);
                b.sub(r, nn, r);
                b.min(r, r, t);
                b.free(nn);
                b.free(t);
                return r;
            };
            emit_double_buffered(
                b, tiles,
                [&](X i, int buf) {
                    X r = tile_rows(i);
                    describe(tw[buf], l1_w[buf], r, kdim, c.weight);
                    X a = b.x();
                    b.muli(a, i, static_cast<int32_t>(tn));
                    b.mul(a, a, w_stride);
                    b.add(a, a, w_exp);
                    b.tload(tw[buf], a, w_stride, qw[buf]);
                    b.free(a);
                    b.free(r);
                },
                [&](X i, int buf) {
                    b.wait(qw[buf], 1);
                    X r = tile_rows(i);
                    X a = b.x();
                    b.muli(a, i, static_cast<int32_t>(tn * 4));
                    b.addi(a, a, static_cast<int32_t>(l1_acc));
                    b.tdesc(tsub, a, rows, r, JAL_DT_F32, c.n * 4);
                    b.free(a);
                    b.mma(tsub, ta, tw[buf]);
                    b.free(r);
                });
            b.free(tiles);
            if (c.bias) b.vadd(tacc, tacc, tbias);
            // Each row to its pair's row of y.
            b.for_range(zero, rows, 1, [&](X r) {
                X p = b.x(), a = b.x();
                b.add(p, r, c0);
                b.tread(p, tplist, p, 0);
                b.mul(p, p, y_stride);
                b.add(p, p, y);
                b.muli(a, r, static_cast<int32_t>(c.n * 4));
                b.addi(a, a, static_cast<int32_t>(l1_acc));
                X nreg = emit_const(b, c.n);
                b.tdesc(tsub, a, one, nreg, JAL_DT_F32);
                b.free(nreg);
                b.tstore(tsub, p, y_stride, qst);
                b.addi(stores, stores, 1);
                b.free(a);
                b.free(p);
            });
            b.free(rows);
        });
        b.free(mc_reg);
    }
    b.bind(next_expert);
    b.addi(e, e, 1);
    b.add(w_exp, w_exp, expert_stride);
    b.jmp(top);
    b.bind(all_done);
    emit_wait_n(b, qst, stores);
    b.bind(done);
    b.end();
    return b.finish();
}

}  // namespace jal::kernels::linear
