// Argmax over rows of logits (argmax.hpp): per-tile maxima, per-slice best, then slice 0
// combines what every slice sent it.
#include <jal/kernels/library/argmax.hpp>

#include <algorithm>
#include <limits>

#include <jal/error.hpp>

#include "emit.hpp"

namespace jal::kernels::linear {

using namespace detail;

namespace {
constexpr uint32_t kMaxSlices = 64;
}  // namespace

std::string argmax_name(const ArgmaxConfig& c)
{
    return "argmax_r" + std::to_string(c.rows) + "v" + std::to_string(c.vocab);
}

CodeObject build_argmax(const ArgmaxConfig& c)
{
    if (c.rows == 0 || c.vocab == 0 || c.rows > 1024 || c.vocab > 0x7fffffffu)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    argmax_name(c) + ": 1..1024 rows of at least one column");
    // Columns per tile: two buffers of rows × tc F32 within 1 MiB.
    uint32_t tc = std::max<uint32_t>(32, (512u << 10) / (c.rows * 4));
    tc = std::min(tc, c.vocab);
    const uint32_t width =
        static_cast<uint32_t>(ceil_div(c.vocab, tc));  // most tiles a slice can have
    const uint32_t M = c.rows;

    Builder b(argmax_name(c));
    X logits = b.arg("logits", JAL_ARG_ADDRESS);
    X stride = b.arg("logits_stride");
    X out_index = b.arg("out_index", JAL_ARG_ADDRESS);
    X out_value = b.arg("out_value", JAL_ARG_ADDRESS);
    SliceShare share = emit_slice_range(b, c.vocab);
    X tc_reg = emit_const(b, tc);
    X tiles = b.x();
    b.addi(tiles, share.count, static_cast<int32_t>(tc - 1));
    b.divu(tiles, tiles, tc_reg);
    X m_reg = emit_const(b, M);
    X one = emit_const(b, 1);
    // A timing-only dispatch computes no data: indices read back from tiles are whatever L1
    // held, so nothing is addressed by them (the fix-ups and picks are skipped).
    X timing_only = b.x();
    b.movsr(timing_only, JAL_SR_TIMING_ONLY);

    const uint32_t l1_in[2] = {b.l1_alloc(M * tc * 4), b.l1_alloc(M * tc * 4)};
    const uint32_t l1_tmax = b.l1_alloc(M * width * 4), l1_tidx = b.l1_alloc(M * width * 4);
    const uint32_t l1_g = b.l1_alloc(M * kMaxSlices * 4), l1_h = b.l1_alloc(M * kMaxSlices * 4);
    const uint32_t l1_val = b.l1_alloc(M * 4), l1_idx = b.l1_alloc(M * 4),
                   l1_best = b.l1_alloc(M * 4);
    T tin[2] = {b.t(), b.t()}, tview = b.t(), tview2 = b.t(), tval = b.t(), tidx = b.t(),
      tbest = b.t(), tall = b.t();
    Q qin[2] = {b.q(), b.q()}, qnet = b.q(), qst = b.q();

    auto describe = [&](T t, X l1, X rows, X cols, jal_dtype dt, uint32_t stride_bytes) {
        b.tdesc(t, l1, rows, cols, dt, stride_bytes);
    };
    auto describe_at = [&](T t, uint32_t l1, X rows, X cols, jal_dtype dt,
                           uint32_t stride_bytes = 0) {
        X a = emit_const(b, l1);
        describe(t, a, rows, cols, dt, stride_bytes);
        b.free(a);
    };
    auto cols_of = [&](X j) {  // min(tc, count − j·tc)
        X r = b.x();
        b.mul(r, j, tc_reg);
        b.sub(r, share.count, r);
        b.min(r, r, tc_reg);
        return r;
    };
    // Column j of a rows × width table at l1 (a rows × 1 view).
    auto column = [&](T t, uint32_t l1, X j, jal_dtype dt, uint32_t table_width) {
        X a = b.x();
        b.muli(a, j, 4);
        b.addi(a, a, static_cast<int32_t>(l1));
        describe(t, a, m_reg, one, dt, table_width * 4);
        b.free(a);
    };
    // For every row r: idx[r] = table[r][best[r]] (I32 table `table_width` wide at l1).
    auto pick = [&](uint32_t l1, uint32_t table_width) {
        Label skip = b.label();
        b.bne(timing_only, zero, skip);
        b.for_range(zero, m_reg, 1, [&](X r) {
            X j = b.x(), a = b.x();
            b.tread(j, tbest, r, 0);
            b.muli(a, r, static_cast<int32_t>(table_width * 4));
            b.muli(j, j, 4);
            b.add(a, a, j);
            b.addi(a, a, static_cast<int32_t>(l1));
            describe(tview, a, one, one, JAL_DT_I32, 0);
            b.tread(j, tview, zero, 0);
            b.twrite(j, tidx, r, 0);
            b.free(a);
            b.free(j);
        });
        b.bind(skip);
    };

    describe_at(tval, l1_val, m_reg, one, JAL_DT_F32);
    describe_at(tidx, l1_idx, m_reg, one, JAL_DT_I32);
    describe_at(tbest, l1_best, m_reg, one, JAL_DT_I32);
    Label empty = b.label(), combine = b.label();
    b.beq(share.count, zero, empty);
    {
        X base = b.x();  // address of this slice's first column
        b.muli(base, share.begin, 4);
        b.add(base, base, logits);
        emit_double_buffered(
            b, tiles,
            [&](X j, int buf) {
                X cols = cols_of(j);
                describe_at(tin[buf], l1_in[buf], m_reg, cols, JAL_DT_F32);
                X a = b.x();
                b.mul(a, j, tc_reg);
                b.muli(a, a, 4);
                b.add(a, a, base);
                b.tload(tin[buf], a, stride, qin[buf]);
                b.free(a);
                b.free(cols);
            },
            [&](X j, int buf) {
                b.wait(qin[buf], 1);
                column(tview, l1_tmax, j, JAL_DT_F32, width);
                b.vredmax(tview, tin[buf]);
                column(tview, l1_tidx, j, JAL_DT_I32, width);
                b.vargmax(tview, tin[buf]);
                // Tile-local index to the vocabulary's: + begin + j·tc.
                X off = b.x();
                b.mul(off, j, tc_reg);
                b.add(off, off, share.begin);
                b.for_range(zero, m_reg, 1, [&](X r) {
                    X v = b.x();
                    b.tread(v, tview, r, 0);
                    b.add(v, v, off);
                    b.twrite(v, tview, r, 0);
                    b.free(v);
                });  // (values only: harmless in a timing-only run)
                b.free(off);
            });
        b.free(base);
        // This slice's best per row: the best tile (lowest on ties), its index.
        describe_at(tall, l1_tmax, m_reg, tiles, JAL_DT_F32, width * 4);
        b.vredmax(tval, tall);
        b.vargmax(tbest, tall);
        pick(l1_tidx, width);
        b.jmp(combine);
    }
    b.bind(empty);  // no columns: a maximum nothing beats
    b.vfill(tval, -std::numeric_limits<float>::infinity());
    b.vfill_i32(tidx, 0);
    b.bind(combine);

    X n = b.slice_count();
    {  // slice 0's tables have a column per slice
        X most = emit_const(b, kMaxSlices);
        Label fits = b.label();
        b.bge(most, n, fits);
        b.trap(JAL_STATUS_INVALID_FIELD);
        b.bind(fits);
        b.free(most);
    }
    Label leader = b.label(), done = b.label();
    b.beq(share.slice, zero, leader);
    b.send(tval, zero, qnet);
    b.send(tidx, zero, qnet);
    b.wait(qnet, 2);
    b.jmp(done);

    b.bind(leader);
    column(tview, l1_g, zero, JAL_DT_F32, kMaxSlices);
    b.vcopy(tview, tval);
    column(tview, l1_h, zero, JAL_DT_I32, kMaxSlices);
    b.vcopy(tview, tidx);
    b.for_range(one, n, 1, [&](X peer) {
        column(tview, l1_g, peer, JAL_DT_F32, kMaxSlices);
        b.recv(tview, peer, qnet);
        column(tview2, l1_h, peer, JAL_DT_I32, kMaxSlices);
        b.recv(tview2, peer, qnet);
        b.wait(qnet, 2);
    });
    describe_at(tall, l1_g, m_reg, n, JAL_DT_F32, kMaxSlices * 4);
    b.vredmax(tval, tall);
    b.vargmax(tbest, tall);
    pick(l1_h, kMaxSlices);
    X four = emit_const(b, 4);
    b.tstore(tidx, out_index, four, qst);
    b.tstore(tval, out_value, four, qst);
    b.wait(qst, 2);
    b.bind(done);
    b.end();
    return b.finish();
}

}  // namespace jal::kernels::linear
