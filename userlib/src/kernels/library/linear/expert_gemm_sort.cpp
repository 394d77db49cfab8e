// The expert GEMM's bucketing of pairs by expert (expert_gemm_kernel.hpp): the counting
// sort of every pair (split by rows), or each of the slice's own experts listed with one
// VTOPK (split by experts).
#include <jal/kernels/library/linear.hpp>

#include "expert_gemm_kernel.hpp"
#include "routing_rows.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear::detail {

// Every pair's expert id into tids (the pair lists' tiles described alongside).
// The ids' load (the router's logits, routing fused) goes out first; finish_ids waits.
void ExpertGemmKernel::issue_ids()
{
    X np = emit_const(b, p.pairs);
    emit_tdesc_at(b, tids, l1_ids, np, one, JAL_DT_I32);
    emit_tdesc_at(b, tplist, l1_plist, np, one, JAL_DT_I32);
    emit_tdesc_at(b, tglist, l1_glist, np, one, JAL_DT_I32);
    emit_tdesc_at(b, tcount, l1_count, experts, one, JAL_DT_I32);
    emit_tdesc_at(b, tstart, l1_start, experts, one, JAL_DT_I32);
    b.free(np);
    if (c.recv_input) {  // the ids and weights the sender's routing sent this slice
        X rows = emit_const(b, c.tokens), kk = emit_const(b, c.k), me = b.slice_index();
        emit_tdesc_at(b, tsub, l1_ids, rows, kk, JAL_DT_I32);
        emit_tdesc_at(b, tacc, l1_rw, rows, kk, JAL_DT_F32);
        b.recv(tsub, me, qr);
        b.recv(tacc, me, qr);
        for (X r : {me, kk, rows}) b.free(r);
        return;
    }
    if (c.recv_logits) return;  // received in finish_ids, after the token rows
    if (c.route) {
        X rows = emit_const(b, c.tokens);
        emit_tdesc_at(b, tx, l1_logits, rows, experts, JAL_DT_F32);
        b.tload(tx, logits, logits_stride, qio);
        b.free(rows);
        b.free(logits_stride);
        b.free(logits);
        return;
    }
    b.tload(tids, ids, four, qio);
}

void ExpertGemmKernel::finish_ids()
{
    if (c.recv_input) {
        b.wait(qr, 2);
        return;
    }
    if (c.recv_logits) {  // every sender's columns, then one signal as after the load
        X rows = emit_const(b, c.tokens);
        emit_receive_shares(b, tx, l1_logits, rows, c.experts, c.experts * 4, qio);
        emit_tdesc_at(b, tx, l1_logits, rows, experts, JAL_DT_F32);
        b.free(rows);
        b.signal(qio, 1);
    }
    if (c.route) {
        route_ids();
        return;
    }
    b.wait(qio, 1);
}

// The fused routing: the tokens' logits (loading into tx) in, the top k ids into tids'
// memory (tokens × k is pair order) and their weights; slice 0 stores both for the kernels
// after this one. Scratch tiles borrow tacc, tsub and tbias (free until the first gather;
// the weights' L1 is the routing's own, so their store may still be reading it then).
void ExpertGemmKernel::route_ids()
{
    X rows = emit_const(b, c.tokens), kk = emit_const(b, c.k);
    emit_tdesc_at(b, tgidx, l1_ids, rows, kk, JAL_DT_I32);
    emit_tdesc_at(b, tacc, l1_rw, rows, kk, JAL_DT_F32);
    emit_tdesc_at(b, tsub, l1_rs, rows, one, JAL_DT_F32);
    emit_tdesc_at(b, tbias, l1_rs + c.tokens * 4, rows, one, JAL_DT_F32);
    b.wait(qio, 1);
    emit_topk_softmax(b, tx, tgidx, tacc, tsub, tbias, c.k);
    X me = b.slice_index();
    if (c.send_output) {  // to this slice's receiver of the rows: it routes no more
        b.send(tgidx, me, qst);
        b.send(tacc, me, qst);
    }
    if (c.send_x_columns) {  // and the columns its combine adds to, still raw (not normed)
        const SliceShare cols = emit_slice_range(b, c.kdim);
        X a = b.x();
        b.muli(a, cols.begin, 4);
        b.addi(a, a, static_cast<int32_t>(l1_x));
        b.tdesc(tsub, a, rows, cols.count, JAL_DT_F32, c.kdim * 4);
        b.send(tsub, me, qst);
        for (X r : {a, cols.count, cols.begin, cols.slice}) b.free(r);
    }
    Label others = b.label();
    X k_bytes = emit_const(b, c.k * 4);
    b.bne(me, zero, others);
    // Not waited for: the slice's end (or the next STAGE) waits for every store.
    b.tstore(tgidx, ids, k_bytes, qst);
    b.tstore(tacc, weights, k_bytes, qst);
    b.bind(others);
    for (X r : {k_bytes, me, kk, rows, weights}) b.free(r);
}

// body(pair, its expert id) for every pair whose id is in [0, E); the others are ignored.
void ExpertGemmKernel::for_each_valid_pair(const std::function<void(X pr, X id)>& body)
{
    X np = emit_const(b, p.pairs);
    b.for_range(zero, np, 1, [&](X pr) {
        X id = b.x(), ok = b.x();
        Label skip = b.label();
        b.tread(id, tids, pr, 0);
        b.sltu(ok, id, experts);
        b.beq(ok, zero, skip);
        body(pr, id);
        b.bind(skip);
        b.free(ok);
        b.free(id);
    });
    b.free(np);
}

// A counting sort of the pairs by expert: afterwards expert e's pairs are entries
// [start[e], count[e]) of the lists (count[e] ends as the cursor past its last pair), plist
// holding each pair's row of y and glist the row of x it reads.
void ExpertGemmKernel::sort_pairs()
{
    b.vfill(tcount, 0.0f);
    for_each_valid_pair([&](X, X id) {
        X n = b.x();
        b.tread(n, tcount, id, 0);
        b.addi(n, n, 1);
        b.twrite(n, tcount, id, 0);
        b.free(n);
    });
    X run = emit_const(b, 0);
    if (p.streamed) {  // the same pass lists the experts with pairs (talist borrows tglist)
        nactive = emit_const(b, 0);
        emit_tdesc_at(b, talist, l1_alist, experts, one, JAL_DT_I32);
    }
    b.for_range(zero, experts, 1, [&](X e) {
        X n = b.x();
        b.tread(n, tcount, e, 0);
        b.twrite(run, tstart, e, 0);
        b.twrite(run, tcount, e, 0);
        b.add(run, run, n);
        if (p.streamed) {
            Label none = b.label();
            b.beq(n, zero, none);
            b.twrite(e, talist, nactive, 0);
            b.addi(nactive, nactive, 1);
            b.bind(none);
        }
        b.free(n);
    });
    if (p.streamed) {
        X np = emit_const(b, p.pairs);
        emit_tdesc_at(b, tglist, l1_glist, np, one, JAL_DT_I32);
        b.free(np);
    }
    if (p.streamed)
        nvalid = run;  // pairs with a valid expert: the sorted lists' length
    else
        b.free(run);
    for_each_valid_pair([&](X pr, X id) {
        X at = b.x(), row = b.x();
        b.tread(at, tcount, id, 0);
        write_entry(at, pr, id, row);
        b.addi(at, at, 1);
        b.twrite(at, tcount, id, 0);
        b.free(row);
        b.free(at);
    });
}

// Few pairs, split by rows: the pairs in expert order (ties: pair order, the counting
// sort's) from one VTOPK of −id over them, then two passes over that order, one listing
// the experts with pairs (their starts and ends, and talist when streamed) and one the
// entries (each one's pair, x row and expert). An expert without pairs is left empty
// (start = end = 0). The lists sort_pairs gives, in O(pairs) scalar steps, not O(E).
void ExpertGemmKernel::sort_few_pairs()
{
    X np = emit_const(b, p.pairs);
    emit_tdesc_at(b, tw[1], l1_ids, one, np, JAL_DT_I32);  // the ids as one row
    emit_tdesc_at(b, tx, l1_vids, one, np, JAL_DT_F32);
    b.vcvt(tx, tw[1]);
    b.vneg(tx, tx);
    emit_tdesc_at(b, tw[0], l1_vidx, one, np, JAL_DT_I32);
    b.vtopk(tw[0], tx, p.pairs);
    emit_tdesc_at(b, tw[0], l1_vidx, np, one, JAL_DT_I32);  // the order, as a column
    b.free(np);
    b.vfill(tstart, 0.0f);
    b.vfill(tcount, 0.0f);
    if (p.streamed) {
        nactive = emit_const(b, 0);
        emit_tdesc_at(b, talist, l1_alist, experts, one, JAL_DT_I32);
    }
    b.free(list_few_pairs(tw[0], true));
    if (p.streamed) {  // talist borrowed tglist's register
        X n = emit_const(b, p.pairs);
        emit_tdesc_at(b, tglist, l1_glist, n, one, JAL_DT_I32);
        b.free(n);
    }
    X run = list_few_pairs(tw[0], false);
    if (p.streamed)
        nvalid = run;  // pairs with a valid expert: the sorted lists' length
    else
        b.free(run);
}

// One pass of sort_few_pairs over the pairs in `order` (a column of pair indices); returns
// the count of pairs with a valid expert.
X ExpertGemmKernel::list_few_pairs(T order, bool experts_pass)
{
    X np = emit_const(b, p.pairs), at = emit_const(b, 0), prev = emit_const(b, -1);
    b.for_range(zero, np, 1, [&](X i) {
        X pr = b.x(), id = b.x(), t = b.x();
        Label skip = b.label();
        b.tread(pr, order, i, 0);
        b.tread(id, tids, pr, 0);
        b.sltu(t, id, experts);
        b.beq(t, zero, skip);
        if (experts_pass) {
            Label same = b.label();
            b.beq(id, prev, same);
            if (p.streamed) {
                b.twrite(id, talist, nactive, 0);
                b.addi(nactive, nactive, 1);
            }
            b.twrite(at, tstart, id, 0);
            b.addi(prev, id, 0);
            b.bind(same);
            b.addi(at, at, 1);
            b.twrite(at, tcount, id, 0);  // the end of its entries so far
        } else {
            write_entry(at, pr, id, t);
            b.addi(at, at, 1);
        }
        b.bind(skip);
        b.free(t);
        b.free(id);
        b.free(pr);
    });
    b.free(prev);
    b.free(np);
    return at;
}

// Entry `at` of the sorted lists: pair pr's row of y, the row of x it reads (its token's
// unless x has a row a pair) and, streamed, its expert id. t is scratch.
void ExpertGemmKernel::write_entry(X at, X pr, X id, X t)
{
    b.twrite(pr, tplist, at, 0);
    if (c.input_per_pair) {
        b.twrite(pr, tglist, at, 0);
    } else {
        X kk = emit_const(b, c.k);
        b.divu(t, pr, kk);
        b.free(kk);
        b.twrite(t, tglist, at, 0);
    }
    if (p.streamed) b.twrite(id, telist, at, 0);
}

// Split by experts, the slice's own experts [e_lo, e_hi) only: each expert's pairs (in pair
// order, as the counting sort leaves them) from one VTOPK over all pairs of the key
// −min(|id − e|, 1), 0 for its pairs and −1 for the others (ties: the lower index first).
// Tiles not in use before the chunks are borrowed.
void ExpertGemmKernel::sort_own_pairs(X e_lo, X e_hi)
{
    X np = emit_const(b, p.pairs), run = emit_const(b, 0);
    emit_tdesc_at(b, tw[1], l1_ids, one, np, JAL_DT_I32);  // the ids as one row
    emit_tdesc_at(b, tx, l1_vids, one, np, JAL_DT_F32);
    b.vcvt(tx, tw[1]);
    emit_tdesc_at(b, tacc, l1_viota, one, experts, JAL_DT_F32);
    b.viota(tacc, zero, one);  // expert numbers as F32
    emit_tdesc_at(b, tbias, l1_vone, one, one, JAL_DT_F32);
    b.vfill(tbias, 1.0f);
    b.for_range(e_lo, e_hi, 1, [&](X e) { list_own_pairs(e, run, np); });
    b.free(run);
    b.free(np);
}

// Expert e's pairs at entries [run, run + count) of the lists; run advances past them.
void ExpertGemmKernel::list_own_pairs(X e, X run, X np)
{
    X a = b.x(), cnt = b.x();
    b.muli(a, e, 4);
    b.addi(a, a, static_cast<int32_t>(l1_viota));
    b.tdesc(tsub, a, one, one, JAL_DT_F32);  // e
    emit_tdesc_at(b, tw[0], l1_vkey, one, np, JAL_DT_F32);
    emit_tdesc_at(b, tw[1], l1_vidx, one, np, JAL_DT_F32);
    b.vsub(tw[0], tx, tsub);
    b.vneg(tw[1], tw[0]);
    b.vmax(tw[0], tw[0], tw[1]);
    b.vmin(tw[0], tw[0], tbias);  // 0 for e's pairs, 1 for the others
    emit_tdesc_at(b, tsub, l1_vsum, one, one, JAL_DT_F32);
    b.vredsum(tsub, tw[0]);
    emit_tdesc_at(b, tgidx, l1_vsum + 4, one, one, JAL_DT_I32);
    b.vcvt(tgidx, tsub);
    b.tread(cnt, tgidx, zero, 0);
    b.sub(cnt, np, cnt);  // pairs − the others
    if (uniform_active(c) == c.experts) {
        // Timing only, the even share the expert loop charges (its count reads as zero):
        // the same sizes of vector work as a real run with uniform ids.
        Label real = b.label();
        b.movsr(a, JAL_SR_TIMING_ONLY);
        b.beq(a, zero, real);
        b.li(cnt, p.pairs / c.experts);
        b.li(a, p.pairs % c.experts);
        b.sltu(a, e, a);
        b.add(cnt, cnt, a);
        b.bind(real);
    }
    b.vneg(tw[0], tw[0]);
    emit_tdesc_at(b, tw[1], l1_vidx, one, np, JAL_DT_I32);
    b.vtopk(tw[1], tw[0], p.pairs);
    b.twrite(run, tstart, e, 0);
    b.sub(a, np, run);  // timing only the count reads as every pair: the lists' room
    b.min(cnt, cnt, a);
    Label none = b.label();
    b.beq(cnt, zero, none);
    emit_tdesc_at(b, tw[1], l1_vidx, one, cnt, JAL_DT_I32);
    b.muli(a, run, 4);
    b.addi(a, a, static_cast<int32_t>(l1_plist));
    b.tdesc(tsub, a, one, cnt, JAL_DT_I32);
    b.vcopy(tsub, tw[1]);
    b.muli(a, run, 4);
    b.addi(a, a, static_cast<int32_t>(l1_glist));
    b.tdesc(tgidx, a, one, cnt, JAL_DT_I32);
    if (c.input_per_pair) {
        b.vcopy(tgidx, tw[1]);
    } else {  // the pair's token: round((pair − (k−1)/2) / k), never a tie, exact for k ≤ 32
        emit_tdesc_at(b, tw[0], l1_vkey, one, cnt, JAL_DT_F32);
        b.vcvt(tw[0], tw[1]);
        b.vadds(tw[0], tw[0], -0.5f * static_cast<float>(c.k - 1));
        b.vscale(tw[0], tw[0], 1.0f / static_cast<float>(c.k));
        b.vcvt(tgidx, tw[0]);
    }
    b.bind(none);
    b.add(run, run, cnt);
    b.twrite(run, tcount, e, 0);  // the end of e's entries, as the counting sort leaves it
    b.free(cnt);
    b.free(a);
}

}  // namespace jal::kernels::linear::detail
