// Argmax over rows of logits (argmax.hpp): per-tile maxima, per-slice best, then slice 0
// combines what every slice sent it.
#include <jal/kernels/library/argmax.hpp>

#include <algorithm>
#include <limits>

#include "checks.hpp"
#include "emit.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear {

using namespace detail;

std::string argmax_name(const ArgmaxConfig& c)
{
    return "argmax_r" + std::to_string(c.rows) + "v" + std::to_string(c.vocab);
}

namespace {

constexpr uint32_t kMaxSlices = 64;

// The generator: this slice's columns tile by tile (scan), its best per row (slice_best),
// then every slice's best to slice 0, which picks the overall best (combine).
class ArgmaxKernel {
public:
    explicit ArgmaxKernel(const ArgmaxConfig& c);
    CodeObject build();

private:
    void declare();
    void layout();
    void scan(X base);
    void fix_tile_indices(X j);
    void slice_best();
    void combine();
    void column(T t, uint32_t l1, X j, jal_dtype dt, uint32_t table_width);
    void pick(uint32_t l1, uint32_t table_width);

    const uint32_t vocab;
    const uint32_t M;      // rows
    const uint32_t tc;     // columns per tile: two buffers of rows × tc F32 within 1 MiB
    const uint32_t width;  // most tiles a slice can have
    Builder b;
    X logits{}, stride{}, out_index{}, out_value{};
    SliceShare share{};
    X tc_reg{}, tiles{}, m_reg{}, one{}, timing_only{};
    uint32_t l1_in[2] = {}, l1_tmax = 0, l1_tidx = 0, l1_g = 0, l1_h = 0, l1_val = 0, l1_idx = 0,
             l1_best = 0;
    T tin[2] = {}, tview{}, tview2{}, tval{}, tidx{}, tbest{}, tall{};
    Q qin[2] = {}, qnet{}, qst{};
};

uint32_t columns_per_tile(const ArgmaxConfig& c)
{
    return std::min(std::max<uint32_t>(32, (512u << 10) / (c.rows * 4)), c.vocab);
}

ArgmaxKernel::ArgmaxKernel(const ArgmaxConfig& c)
    : vocab(c.vocab), M(c.rows), tc(columns_per_tile(c)),
      width(static_cast<uint32_t>(ceil_div(c.vocab, tc))), b(argmax_name(c))
{}

void ArgmaxKernel::declare()
{
    logits = b.arg("logits", JAL_ARG_ADDRESS);
    stride = b.arg("logits_stride");
    out_index = b.arg("out_index", JAL_ARG_ADDRESS);
    out_value = b.arg("out_value", JAL_ARG_ADDRESS);
}

void ArgmaxKernel::layout()
{
    l1_in[0] = b.l1_alloc(M * tc * 4);
    l1_in[1] = b.l1_alloc(M * tc * 4);
    l1_tmax = b.l1_alloc(M * width * 4), l1_tidx = b.l1_alloc(M * width * 4);
    l1_g = b.l1_alloc(M * kMaxSlices * 4), l1_h = b.l1_alloc(M * kMaxSlices * 4);
    l1_val = b.l1_alloc(M * 4), l1_idx = b.l1_alloc(M * 4), l1_best = b.l1_alloc(M * 4);
    tin[0] = b.t(), tin[1] = b.t(), tview = b.t(), tview2 = b.t(), tval = b.t(), tidx = b.t(),
    tbest = b.t(), tall = b.t();
    qin[0] = b.q(), qin[1] = b.q(), qnet = b.q(), qst = b.q();
}

// Column j of a rows × width table at l1 (a rows × 1 view).
void ArgmaxKernel::column(T t, uint32_t l1, X j, jal_dtype dt, uint32_t table_width)
{
    X a = b.x();
    b.muli(a, j, 4);
    b.addi(a, a, static_cast<int32_t>(l1));
    b.tdesc(t, a, m_reg, one, dt, table_width * 4);
    b.free(a);
}

// For every row r: idx[r] = table[r][best[r]] (I32 table `table_width` wide at l1).
void ArgmaxKernel::pick(uint32_t l1, uint32_t table_width)
{
    Label skip = b.label();
    b.bne(timing_only, zero, skip);
    b.for_range(zero, m_reg, 1, [&](X r) {
        X j = b.x(), a = b.x();
        b.tread(j, tbest, r, 0);
        b.muli(a, r, static_cast<int32_t>(table_width * 4));
        b.muli(j, j, 4);
        b.add(a, a, j);
        b.addi(a, a, static_cast<int32_t>(l1));
        b.tdesc(tview, a, one, one, JAL_DT_I32, 0);
        b.tread(j, tview, zero, 0);
        b.twrite(j, tidx, r, 0);
        b.free(a);
        b.free(j);
    });
    b.bind(skip);
}

// Tile j's indices (column j of the index table, in tview) from tile-local to the
// vocabulary's: + begin + j·tc. (Values only: harmless in a timing-only run.)
void ArgmaxKernel::fix_tile_indices(X j)
{
    X off = b.x();
    b.mul(off, j, tc_reg);
    b.add(off, off, share.begin);
    b.for_range(zero, m_reg, 1, [&](X r) {
        X v = b.x();
        b.tread(v, tview, r, 0);
        b.add(v, v, off);
        b.twrite(v, tview, r, 0);
        b.free(v);
    });
    b.free(off);
}

// Every tile of this slice's columns (from base): its per-row maximum and index into
// columns of the tmax and tidx tables.
void ArgmaxKernel::scan(X base)
{
    emit_double_buffered(
        b, tiles,
        [&](X j, int buf) {
            X cols = emit_block_size(b, j, share.count, tc_reg);
            emit_tdesc_at(b, tin[buf], l1_in[buf], m_reg, cols, JAL_DT_F32);
            X a = emit_block_elem_addr(b, j, tc_reg, 4, base);
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
            fix_tile_indices(j);
        });
}

// This slice's best per row into tval and tidx (no columns: a maximum nothing beats).
void ArgmaxKernel::slice_best()
{
    Label empty = b.label(), best_done = b.label();
    b.beq(share.count, zero, empty);
    X base = b.x();  // address of this slice's first column
    b.muli(base, share.begin, 4);
    b.add(base, base, logits);
    scan(base);
    b.free(base);
    // the best tile (lowest on ties), its index
    emit_tdesc_at(b, tall, l1_tmax, m_reg, tiles, JAL_DT_F32, width * 4);
    b.vredmax(tval, tall);
    b.vargmax(tbest, tall);
    pick(l1_tidx, width);
    b.jmp(best_done);
    b.bind(empty);
    b.vfill(tval, -std::numeric_limits<float>::infinity());
    b.vfill_i32(tidx, 0);
    b.bind(best_done);
}

// Every slice sends its best to slice 0, which keeps a column per slice and stores the best.
void ArgmaxKernel::combine()
{
    X n = b.slice_count();
    emit_trap_unless_at_most(b, n, kMaxSlices);  // slice 0's tables have a column per slice
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
    emit_tdesc_at(b, tall, l1_g, m_reg, n, JAL_DT_F32, kMaxSlices * 4);
    b.vredmax(tval, tall);
    b.vargmax(tbest, tall);
    pick(l1_h, kMaxSlices);
    X four = emit_const(b, 4);
    b.tstore(tidx, out_index, four, qst);
    b.tstore(tval, out_value, four, qst);
    b.wait(qst, 2);
    b.bind(done);
}

CodeObject ArgmaxKernel::build()
{
    declare();
    share = emit_slice_range(b, vocab);
    const Blocks tile_blocks = emit_blocks(b, share.count, tc);
    tc_reg = tile_blocks.unit, tiles = tile_blocks.count;
    m_reg = emit_const(b, M);
    one = emit_const(b, 1);
    // A timing-only dispatch computes no data: indices read back from tiles are whatever L1
    // held, so nothing is addressed by them (the fix-ups and picks are skipped).
    timing_only = b.x();
    b.movsr(timing_only, JAL_SR_TIMING_ONLY);
    layout();
    emit_tdesc_at(b, tval, l1_val, m_reg, one, JAL_DT_F32);
    emit_tdesc_at(b, tidx, l1_idx, m_reg, one, JAL_DT_I32);
    emit_tdesc_at(b, tbest, l1_best, m_reg, one, JAL_DT_I32);
    slice_best();
    combine();
    b.end();
    return b.finish();
}

}  // namespace

CodeObject build_argmax(const ArgmaxConfig& c)
{
    require(c.rows != 0 && c.vocab != 0 && c.rows <= 1024 && c.vocab <= 0x7fffffffu, argmax_name(c),
            "1..1024 rows of at least one column");
    return ArgmaxKernel(c).build();
}

}  // namespace jal::kernels::linear
