// Grouped expert GEMM (expert_gemm.hpp): per owned expert, the pairs that chose it are
// gathered, multiplied by the expert's weights streamed through two buffers, and scattered
// back to their rows of y.
#include <jal/kernels/library/expert_gemm.hpp>

#include <algorithm>

#include <jal/isa/numerics.hpp>

#include "checks.hpp"
#include "emit.hpp"
#include "tiles.hpp"

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

namespace {

// What the generator derives from a configuration (checked).
struct ExpertPlan {
    uint32_t pairs;  // tokens·k
    jal_dtype act;   // the activation format
    uint64_t wrow, arow;
    bool convert;  // x is converted to act before the MMA
    uint32_t tn;   // W rows per tile
    uint32_t mc;   // pairs per chunk
};

ExpertPlan plan(const ExpertGemmConfig& c, const std::string& name)
{
    ExpertPlan p{};
    p.pairs = c.tokens * c.k;
    p.act = activation_dtype(c.weight, c.numerics);
    p.wrow = numerics::row_bytes(c.weight, c.kdim);
    p.arow = numerics::row_bytes(p.act, c.kdim);
    require(!(c.tokens == 0 || c.k == 0 || c.experts == 0 || c.n == 0 || c.kdim == 0 ||
              p.wrow == 0 || p.arow == 0 || p.pairs > 8192 || c.experts > 0x7fffffffu),
            name, "bad shape or format (at most 8192 pairs)");
    p.convert = p.act != JAL_DT_F32;
    // W tiles: tn rows of all K, two buffers.
    p.tn = static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>(1, kWeightBudget / 2 / p.wrow), 256));
    p.tn = std::min(p.tn, c.n);
    // L1: ids, two pair lists, the W buffers, the bias row, then per pair row: x (F32), its
    // conversion, and the accumulator of N columns.
    const uint64_t fixed = 3 * (uint64_t{p.pairs} * 4 + 64) + 2 * (p.tn * p.wrow + 64) +
                           (uint64_t{c.n} * 4 + 64) + 256;
    const uint64_t per_row = uint64_t{c.kdim} * 4 + (p.convert ? p.arow : 0) + uint64_t{c.n} * 4;
    require(fixed + per_row <= kL1, name, "does not fit in L1");
    p.mc = static_cast<uint32_t>(std::min<uint64_t>(p.pairs, (kL1 - fixed) / per_row));
    return p;
}

// The generator: per owned expert, select the pairs that chose it, then per chunk of
// them gather x, multiply by the expert's W tiles and scatter the rows to y.
class ExpertGemmKernel {
public:
    ExpertGemmKernel(const ExpertGemmConfig& c, const std::string& name);
    CodeObject build();

private:
    void declare();
    void layout();
    void load_ids();
    void select_pairs(X e);
    void load_bias(X e);
    void chunk(X c0, X mc_reg);
    void multiply(X rows);
    X tile_rows(X i);
    void scatter(X c0, X rows);

    const ExpertGemmConfig& c;
    const ExpertPlan p;
    Builder b;
    X x{}, x_stride{}, ids{}, w_shards{}, w_stride{}, expert_stride{}, bias{}, y{}, y_stride{};
    SliceShare share{};
    X w_exp{}, cnt{};  // the expert's first row of W; how many pairs chose it
    uint32_t l1_ids = 0, l1_plist = 0, l1_glist = 0, l1_w[2] = {}, l1_bias = 0, l1_x = 0;
    uint32_t l1_a = 0, l1_acc = 0;
    T tids{}, tplist{}, tglist{}, tgidx{}, tx{}, ta{}, tw[2] = {}, tbias{}, tacc{}, tsub{};
    Q qio{}, qw[2] = {}, qst{};
    X one{}, four{}, kdim{}, stores{};
};

ExpertGemmKernel::ExpertGemmKernel(const ExpertGemmConfig& config, const std::string& name)
    : c(config), p(plan(config, name)), b(name)
{}

void ExpertGemmKernel::declare()
{
    x = b.arg("x", JAL_ARG_ADDRESS);
    x_stride = b.arg("x_stride");
    ids = b.arg("ids", JAL_ARG_ADDRESS);
    w_shards = b.arg("w_shards", JAL_ARG_ADDRESS);
    w_stride = b.arg("w_stride");
    expert_stride = b.arg("expert_stride");
    if (c.bias) bias = b.arg("bias", JAL_ARG_ADDRESS);
    y = b.arg("y", JAL_ARG_ADDRESS);
    y_stride = b.arg("y_stride");
}

void ExpertGemmKernel::layout()
{
    const uint32_t pairs = p.pairs;
    l1_ids = b.l1_alloc(pairs * 4), l1_plist = b.l1_alloc(pairs * 4),
    l1_glist = b.l1_alloc(pairs * 4);
    l1_w[0] = b.l1_alloc(static_cast<uint32_t>(p.tn * p.wrow));
    l1_w[1] = b.l1_alloc(static_cast<uint32_t>(p.tn * p.wrow));
    l1_bias = b.l1_alloc(c.n * 4);
    l1_x = b.l1_alloc(p.mc * c.kdim * 4);
    l1_a = p.convert ? b.l1_alloc(static_cast<uint32_t>(p.mc * p.arow)) : l1_x;
    l1_acc = b.l1_alloc(p.mc * c.n * 4);
    tids = b.t(), tplist = b.t(), tglist = b.t(), tgidx = b.t(), tx = b.t(),
    ta = p.convert ? b.t() : tx;
    tw[0] = b.t(), tw[1] = b.t(), tbias = b.t(), tacc = b.t(), tsub = b.t();
    qio = b.q(), qw[0] = b.q(), qw[1] = b.q(), qst = b.q();
}

// Every pair's expert id into tids (the pair lists' tiles described alongside).
void ExpertGemmKernel::load_ids()
{
    X np = emit_const(b, p.pairs);
    emit_tdesc_at(b, tids, l1_ids, np, one, JAL_DT_I32);
    emit_tdesc_at(b, tplist, l1_plist, np, one, JAL_DT_I32);
    emit_tdesc_at(b, tglist, l1_glist, np, one, JAL_DT_I32);
    b.tload(tids, ids, four, qio);
    b.wait(qio, 1);
    b.free(np);
}

// The pairs that chose e: their position p (row of y) and the row of x to gather; cnt.
void ExpertGemmKernel::select_pairs(X e)
{
    b.li(cnt, 0);
    X np = emit_const(b, p.pairs);
    b.for_range(zero, np, 1, [&](X pr) {
        X id = b.x();
        Label skip = b.label();
        b.tread(id, tids, pr, 0);
        b.bne(id, e, skip);
        b.twrite(pr, tplist, cnt, 0);
        if (c.input_per_pair) {
            b.twrite(pr, tglist, cnt, 0);
        } else {
            X kk = emit_const(b, c.k);
            b.divu(id, pr, kk);
            b.free(kk);
            b.twrite(id, tglist, cnt, 0);
        }
        b.addi(cnt, cnt, 1);
        b.bind(skip);
        b.free(id);
    });
    b.free(np);
}

void ExpertGemmKernel::load_bias(X e)
{
    X nreg = emit_const(b, c.n);
    emit_tdesc_at(b, tbias, l1_bias, one, nreg, JAL_DT_F32);
    X a = b.x();
    b.muli(a, e, static_cast<int32_t>(c.n * 4));
    b.add(a, a, bias);
    b.tload(tbias, a, four, qio);
    b.wait(qio, 1);
    b.free(a);
    b.free(nreg);
}

// rows of W tile i: min(tn, N − i·tn), into a new register.
X ExpertGemmKernel::tile_rows(X i)
{
    X r = b.x(), t = emit_const(b, p.tn), nn = emit_const(b, c.n);
    b.mul(r, i, t);
    b.sub(r, nn, r);
    b.min(r, r, t);
    b.free(nn);
    b.free(t);
    return r;
}

// The chunk's rows of the accumulator: ta times the expert's rows in tiles of tn
// through two buffers.
void ExpertGemmKernel::multiply(X rows)
{
    X tiles = emit_const(b, ceil_div(c.n, p.tn));
    emit_double_buffered(
        b, tiles,
        [&](X i, int buf) {
            X r = tile_rows(i);
            emit_tdesc_at(b, tw[buf], l1_w[buf], r, kdim, c.weight);
            X a = b.x();
            b.muli(a, i, static_cast<int32_t>(p.tn));
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
            b.muli(a, i, static_cast<int32_t>(p.tn * 4));
            b.addi(a, a, static_cast<int32_t>(l1_acc));
            b.tdesc(tsub, a, rows, r, JAL_DT_F32, c.n * 4);
            b.free(a);
            b.mma(tsub, ta, tw[buf]);
            b.free(r);
        });
    b.free(tiles);
}

// Each row of the accumulator to its pair's row of y.
void ExpertGemmKernel::scatter(X c0, X rows)
{
    b.for_range(zero, rows, 1, [&](X r) {
        X pr = b.x(), a = b.x();
        b.add(pr, r, c0);
        b.tread(pr, tplist, pr, 0);
        b.mul(pr, pr, y_stride);
        b.add(pr, pr, y);
        b.muli(a, r, static_cast<int32_t>(c.n * 4));
        b.addi(a, a, static_cast<int32_t>(l1_acc));
        X nreg = emit_const(b, c.n);
        b.tdesc(tsub, a, one, nreg, JAL_DT_F32);
        b.free(nreg);
        emit_counted_store(b, tsub, pr, y_stride, qst, stores);
        b.free(a);
        b.free(pr);
    });
}

// Pairs [c0, c0 + min(mc, cnt − c0)) of the expert: gather, convert, multiply, scatter.
void ExpertGemmKernel::chunk(X c0, X mc_reg)
{
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
    emit_tdesc_at(b, tx, l1_x, rows, kdim, JAL_DT_F32);
    b.tgather(tx, x, x_stride, tgidx, qio);
    b.wait(qio, 1);
    if (p.convert) {
        emit_tdesc_at(b, ta, l1_a, rows, kdim, p.act);
        b.vcvt(ta, tx, activation_cvt_mode(c.numerics));
    }
    X nreg = emit_const(b, c.n);
    emit_tdesc_at(b, tacc, l1_acc, rows, nreg, JAL_DT_F32);
    b.free(nreg);
    b.vfill(tacc, 0.0f);
    multiply(rows);
    if (c.bias) b.vadd(tacc, tacc, tbias);
    scatter(c0, rows);
    b.free(rows);
}

CodeObject ExpertGemmKernel::build()
{
    declare();
    share = emit_slice_range(b, c.experts);
    const Label done = emit_skip_if_empty(b, share.count);
    X w = emit_table_entry(b, w_shards, share.slice);
    b.free(w_shards);
    b.free(share.slice);
    layout();
    one = emit_const(b, 1);
    four = emit_const(b, 4);
    kdim = emit_const(b, c.kdim);
    stores = emit_const(b, 0);
    load_ids();

    // The slice's experts e in [begin, begin + count), w_exp at each one's first row of W.
    X e_end = b.x();
    b.add(e_end, share.begin, share.count);
    b.free(share.count);
    X e = share.begin;
    w_exp = b.x(), cnt = b.x();
    Label next_expert = b.label(), top = b.label(), all_done = b.label();
    b.mov(w_exp, w);
    b.free(w);
    b.bind(top);
    b.bge(e, e_end, all_done);
    select_pairs(e);
    b.beq(cnt, zero, next_expert);
    if (c.bias) load_bias(e);
    // Chunks of at most mc pairs.
    X mc_reg = emit_const(b, p.mc);
    b.for_range(zero, cnt, static_cast<int32_t>(p.mc), [&](X c0) { chunk(c0, mc_reg); });
    b.free(mc_reg);
    b.bind(next_expert);
    b.addi(e, e, 1);
    b.add(w_exp, w_exp, expert_stride);
    b.jmp(top);
    b.bind(all_done);
    return emit_finish(b, qst, stores, done);
}

}  // namespace

CodeObject build_expert_gemm(const ExpertGemmConfig& c)
{
    return ExpertGemmKernel(c, expert_gemm_name(c)).build();
}

}  // namespace jal::kernels::linear
