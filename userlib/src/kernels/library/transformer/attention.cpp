// attention.cpp: flash attention over the slice-local KV cache, with GQA, sinks and the
// sliding window (attention.hpp).
//
// An item is (KV head g, block of n query tokens). Its r = n_head/n_head_kv query heads
// are stacked head-major into one matrix of r*n rows (row hh*n + t), so one MMA serves the
// whole group and every block of n rows has consecutive query positions, which is what
// VMASK describes. Per chunk of keys, per row: S = Q K^T (Q pre-scaled), mask, new maximum
// m' = max(m, max S), P = exp(S - m'), alpha = exp(m - m'), l = l*alpha + sum P,
// O = O*alpha + P V. The running state starts at m = sink, l = 1 (the sink's own term),
// or m = -FLT_MAX, l = 0 without sinks: a finite start keeps a fully masked chunk from
// producing exp(-inf - -inf).
#include <jal/kernels/library/attention.hpp>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <cmath>

#include "row_blocks.hpp"
#include "tensor_checks.hpp"

namespace jal::kernels {

using namespace transformer_detail;

uint32_t AttentionConfig::queries_per_item() const
{
    const uint32_t r = n_head_kv ? n_head / n_head_kv : 1;
    return q_block ? q_block : std::max(1u, 128 / std::max(1u, r));
}

uint32_t AttentionConfig::keys_per_chunk() const
{
    return k_block ? k_block : 256;
}

uint32_t AttentionConfig::splits() const
{
    return key_splits ? key_splits : 1;
}

float AttentionConfig::softmax_scale() const
{
    return scale != 0.0f ? scale
                         : static_cast<float>(1.0 / std::sqrt(static_cast<double>(head_dim)));
}

CodeObject build_attention(const AttentionConfig& cfg)
{
    const std::string name = "attention_h" + std::to_string(cfg.n_head) + "_g" +
                             std::to_string(cfg.n_head_kv) + "_d" + std::to_string(cfg.head_dim) +
                             (cfg.window ? "_w" + std::to_string(cfg.window) : "") +
                             (cfg.sinks ? "_sinks" : "");
    require(cfg.n_head > 0 && cfg.n_head_kv > 0 && cfg.n_head % cfg.n_head_kv == 0, name,
            "n_head_kv must divide n_head");
    require(cfg.head_dim > 0 && cfg.n_ctx > 0, name, "head_dim and n_ctx must be positive");
    require(cfg.splits() <= 64, name, "at most 64 key splits");
    const uint32_t G = cfg.n_head_kv;
    const uint32_t r = cfg.n_head / G;
    const uint32_t D = cfg.head_dim;
    const uint32_t Bq = cfg.queries_per_item();
    const uint32_t Nk = cfg.keys_per_chunk();
    const uint32_t M = r * Bq;  // rows of the stacked matrices
    const uint32_t S = cfg.splits();
    Builder b(name);

    X q = b.arg("q", JAL_ARG_ADDRESS);
    X q_stride = b.arg("q_stride");
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    X rows = b.arg("rows");
    X pos0 = b.arg("pos0");
    X heads = b.arg("heads", JAL_ARG_ADDRESS);
    X sinks = b.arg("sinks", JAL_ARG_ADDRESS);
    trap_unless_within(b, pos0, rows, cfg.n_ctx);

    const uint32_t l1_q = b.l1_alloc(M * D * 4);
    const uint32_t l1_k = b.l1_alloc(Nk * D * 4);
    const uint32_t l1_v = b.l1_alloc(D * Nk * 4);
    const uint32_t l1_s = b.l1_alloc(M * Nk * 4);
    const uint32_t l1_o = b.l1_alloc(M * D * 4);
    const uint32_t l1_m = b.l1_alloc(M * 4);
    const uint32_t l1_mc = b.l1_alloc(M * 4);
    const uint32_t l1_l = b.l1_alloc(M * 4);
    const uint32_t l1_rs = b.l1_alloc(M * 4);
    const uint32_t l1_sink = b.l1_alloc(4);
    // a partner split's running state, received (key splits only)
    const uint32_t l1_m2 = S > 1 ? b.l1_alloc(M * 4) : 0;
    const uint32_t l1_l2 = S > 1 ? b.l1_alloc(M * 4) : 0;
    const uint32_t l1_o2 = S > 1 ? b.l1_alloc(M * D * 4) : 0;

    X dim = constant(b, D);
    X one = constant(b, 1);
    X dim_bytes = constant(b, D * 4);
    X rr = constant(b, r);
    X l1 = b.x();    // scratch: the L1 address of the tile being described
    X addr = b.x();  // scratch: a device address
    T tq = b.t(), tk = b.t(), tv = b.t(), ts = b.t(), to = b.t();
    T tm = b.t(), tmc = b.t(), tl = b.t(), trs = b.t(), tsub = b.t(), tsink = b.t();
    T tm2 = b.t(), tl2 = b.t(), to2 = b.t();
    Q sem = b.q();

    auto desc = [&](T t, uint32_t l1_off, X nrows, X ncols) {
        b.li(l1, l1_off);
        b.tdesc(t, l1, nrows, ncols, JAL_DT_F32);
    };
    // t = rows [hh*n, (hh+1)*n) of a stacked matrix at l1_off whose rows are row_bytes long
    auto desc_head = [&](T t, uint32_t l1_off, X hh, X n, X ncols, X row_bytes) {
        b.mul(l1, hh, n);
        b.mul(l1, l1, row_bytes);
        b.addi(l1, l1, static_cast<int32_t>(l1_off));
        b.tdesc(t, l1, n, ncols, JAL_DT_F32);
    };

    X item0 = b.slice_index();
    X n_slices = b.slice_count();
    if (S > 1) {
        // Every item's splits on consecutive slices of one round: split 0 only receives,
        // the others only send, so no slice waits for one that waits for it.
        X t = constant(b, S);
        Label ok = b.label();
        b.remu(t, n_slices, t);
        b.beq(t, zero, ok);
        b.trap(JAL_STATUS_INVALID_FIELD);
        b.bind(ok);
        b.free(t);
    }
    X n_items = b.x();
    {
        X t = constant(b, Bq);
        b.add(n_items, rows, t);
        b.addi(n_items, n_items, -1);
        b.divu(n_items, n_items, t);  // query blocks
        b.muli(n_items, n_items, static_cast<int32_t>(G * S));
        b.free(t);
    }
    for_strided(b, item0, n_items, n_slices, [&](X item) {
        X out_base = b.x(), n = b.x(), rn = b.x(), p_first = b.x(), kend = b.x(), kc = b.x(),
          vc = b.x(), tmp = b.x();
        X g = b.x();
        {
            X t0 = b.x(), head_col = b.x();
            // item = (query block * G + g) * S + split
            b.li(tmp, S);
            b.divu(t0, item, tmp);
            b.li(tmp, G);
            b.remu(g, t0, tmp);
            b.divu(t0, t0, tmp);
            b.muli(t0, t0, static_cast<int32_t>(Bq));
            b.sub(n, rows, t0);
            b.li(tmp, Bq);
            b.min(n, n, tmp);
            b.muli(rn, n, static_cast<int32_t>(r));
            b.add(p_first, pos0, t0);
            b.add(kend, p_first, n);  // one past the last query's position: the causal end
            b.muli(kc, g, 16);
            b.add(kc, kc, heads);
            b.ld(vc, kc, 8);
            b.ld(kc, kc, 0);
            // the group's first query head as a byte offset in a row of q or out
            b.muli(head_col, g, static_cast<int32_t>(r * D * 4));
            b.mul(out_base, t0, out_stride);
            b.add(out_base, out_base, out);
            b.add(out_base, out_base, head_col);
            b.mul(tmp, t0, q_stride);
            b.add(tmp, tmp, q);
            b.add(tmp, tmp, head_col);
            b.free(head_col);
            b.free(t0);
        }

        // Q: each head of the group as n rows, stacked head-major; then scaled once.
        b.for_range(zero, rr, 1, [&](X hh) {
            desc_head(tsub, l1_q, hh, n, dim, dim_bytes);
            b.muli(addr, hh, static_cast<int32_t>(D * 4));
            b.add(addr, addr, tmp);
            b.tload(tsub, addr, q_stride, sem);
        });
        b.wait(sem, static_cast<int32_t>(r));
        desc(tq, l1_q, rn, dim);
        b.vscale(tq, tq, cfg.softmax_scale());

        // running state: O = 0; m = sink or -FLT_MAX; l = 1 or 0
        desc(to, l1_o, rn, dim);
        desc(tm, l1_m, rn, one);
        desc(tmc, l1_mc, rn, one);
        desc(tl, l1_l, rn, one);
        desc(trs, l1_rs, rn, one);
        b.vfill(to, 0.0f);
        Label no_sink = b.label(), state_done = b.label();
        if (cfg.sinks) {
            if (S > 1) {  // only split 0 starts from the sink
                X sp = b.x();
                b.li(sp, S);
                b.remu(sp, item, sp);
                b.bne(sp, zero, no_sink);
                b.free(sp);
            }
            desc(tsink, l1_sink, one, one);
            b.vfill(tm, 0.0f);
            b.muli(tmp, g, static_cast<int32_t>(r * 4));
            b.add(tmp, tmp, sinks);  // the group's first head's sink
            b.for_range(zero, rr, 1, [&](X hh) {
                X bits = b.x();
                b.muli(addr, hh, 4);
                b.add(addr, addr, tmp);
                b.lw(bits, addr);
                b.twrite(bits, tsink, zero, 0);
                b.li(addr, 4);
                desc_head(tsub, l1_m, hh, n, one, addr);
                b.vadd(tsub, tsub, tsink);  // 1 x 1 broadcast
                b.free(bits);
            });
            b.vfill(tl, 1.0f);
            b.jmp(state_done);
        }
        b.bind(no_sink);
        b.vfill(tm, -FLT_MAX);
        b.vfill(tl, 0.0f);
        b.bind(state_done);
        b.free(g);

        // the keys any query of the block sees: [p_first - window + 1, p_last]
        X kstart = b.x();
        if (cfg.window) {
            b.addi(kstart, p_first, 1 - static_cast<int32_t>(cfg.window));
            b.max(kstart, kstart, zero);
        } else {
            b.li(kstart, 0);
        }
        if (S > 1) {
            // this split's share: [kstart + split*per, kstart + (split+1)*per) within kend
            X per = b.x(), sp = b.x();
            b.sub(per, kend, kstart);
            b.addi(per, per, static_cast<int32_t>(S - 1));
            b.li(sp, S);
            b.divu(per, per, sp);
            b.remu(sp, item, sp);
            b.mul(sp, sp, per);
            b.add(kstart, kstart, sp);
            b.add(sp, kstart, per);
            b.min(kend, kend, sp);
            b.free(sp);
            b.free(per);
        }
        b.for_range(kstart, kend, static_cast<int32_t>(Nk), [&](X k0) {
            X nk = b.x();
            b.sub(nk, kend, k0);
            b.li(tmp, Nk);
            b.min(nk, nk, tmp);
            desc(tk, l1_k, nk, dim);
            b.muli(addr, k0, static_cast<int32_t>(D * 4));
            b.add(addr, addr, kc);
            b.tload(tk, addr, dim_bytes, sem);
            desc(tv, l1_v, dim, nk);
            b.muli(addr, k0, 4);
            b.add(addr, addr, vc);
            b.li(tmp, cfg.n_ctx * 4ll);
            b.tload(tv, addr, tmp, sem);
            b.wait(sem, 2);

            desc(ts, l1_s, rn, nk);
            b.vfill(ts, 0.0f);
            b.mma(ts, tq, tk);  // S = (scale Q) K^T
            b.muli(tmp, nk, 4);
            b.for_range(zero, rr, 1, [&](X hh) {
                desc_head(tsub, l1_s, hh, n, nk, tmp);
                b.vmask(tsub, p_first, k0, cfg.window);
            });
            b.vredmax(tmc, ts);
            b.vmax(tmc, tmc, tm);  // m'
            b.vsub(ts, ts, tmc);
            b.vexp(ts, ts);  // P
            b.vsub(tm, tm, tmc);
            b.vexp(tm, tm);  // alpha = exp(m - m')
            b.vmul(tl, tl, tm);
            b.vmul(to, to, tm);
            b.vredsum(trs, ts);
            b.vadd(tl, tl, trs);
            b.mma(to, ts, tv);  // O += P V  (V^T is the weight-layout operand)
            b.vcopy(tm, tmc);
            b.free(nk);
        });
        b.free(kstart);

        Label item_done = b.label();
        if (S > 1) {
            // Splits 1..S-1 send their (m, l, O) to split 0's slice; split 0 merges them
            // in split order: m' = max(m, m2), l = l e^(m-m') + l2 e^(m2-m'), same for O.
            X sp = b.x(), peer = b.x();
            Label merge = b.label();
            b.li(sp, S);
            b.remu(sp, item, sp);
            b.beq(sp, zero, merge);
            b.sub(peer, item, sp);
            b.remu(peer, peer, n_slices);
            b.send(tm, peer, sem);
            b.send(tl, peer, sem);
            b.send(to, peer, sem);
            b.wait(sem, 3);
            b.jmp(item_done);
            b.bind(merge);
            desc(tm2, l1_m2, rn, one);
            desc(tl2, l1_l2, rn, one);
            desc(to2, l1_o2, rn, dim);
            b.li(sp, S);
            b.for_range(one, sp, 1, [&](X j) {
                b.add(peer, item, j);
                b.remu(peer, peer, n_slices);
                b.recv(tm2, peer, sem);
                b.recv(tl2, peer, sem);
                b.recv(to2, peer, sem);
                b.wait(sem, 3);
                b.vmax(tmc, tm, tm2);
                b.vsub(tm, tm, tmc);
                b.vexp(tm, tm);
                b.vsub(tm2, tm2, tmc);
                b.vexp(tm2, tm2);
                b.vmul(tl, tl, tm);
                b.vmul(tl2, tl2, tm2);
                b.vadd(tl, tl, tl2);
                b.vmul(to, to, tm);
                b.vmul(to2, to2, tm2);
                b.vadd(to, to, to2);
                b.vcopy(tm, tmc);
            });
            b.free(peer);
            b.free(sp);
        }
        b.vrecip(tl, tl);
        b.vmul(to, to, tl);
        b.for_range(zero, rr, 1, [&](X hh) {
            desc_head(tsub, l1_o, hh, n, dim, dim_bytes);
            b.muli(addr, hh, static_cast<int32_t>(D * 4));
            b.add(addr, addr, out_base);
            b.tstore(tsub, addr, out_stride, sem);
        });
        b.wait(sem, static_cast<int32_t>(r));
        b.bind(item_done);
        b.free(tmp);
        b.free(vc);
        b.free(kc);
        b.free(kend);
        b.free(p_first);
        b.free(rn);
        b.free(n);
        b.free(out_base);
    });
    b.end();
    return b.finish();
}

std::vector<uint64_t> attention_args(const AttentionConfig& cfg, const TensorRef& q,
                                     const TensorRef& out, uint32_t pos0, uint64_t heads_va,
                                     uint64_t sinks_va)
{
    const std::string k = "attention";
    check_tensor(q, JAL_DT_F32, cfg.n_head * cfg.head_dim, 0, k, "q");
    check_tensor(out, JAL_DT_F32, cfg.n_head * cfg.head_dim, q.rows, k, "out");
    require(heads_va != 0, k, "no head table");
    require(!cfg.sinks || sinks_va != 0, k, "the kernel was built with sinks but none were given");
    require(uint64_t{pos0} + q.rows <= cfg.n_ctx, k, "positions run past the cache");
    return {q.va,   stride_of(q), out.va,   stride_of(out),
            q.rows, pos0,         heads_va, cfg.sinks ? sinks_va : 0};
}

jal_dispatch_report attention(Launcher& launcher, const Program& program,
                              const AttentionConfig& config, const TensorRef& q,
                              const TensorRef& out, uint32_t pos0, uint64_t heads_va,
                              uint64_t sinks_va, const DispatchOptions& options)
{
    const uint64_t mask = options.slice_mask ? options.slice_mask : launcher.usable_slice_mask();
    require(std::popcount(mask) % config.splits() == 0, "attention",
            "the dispatch's slice count must be a multiple of key_splits");
    return launcher.run(program, args_of(attention_args(config, q, out, pos0, heads_va, sinks_va)),
                        options);
}

}  // namespace jal::kernels
