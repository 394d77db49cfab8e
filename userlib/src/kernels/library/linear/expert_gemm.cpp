// Grouped expert GEMM (expert_gemm.hpp): the pairs are bucketed by expert once (a counting
// sort in L1), then per expert the slice works on (its own experts, or its rows of every
// expert) the pairs that chose it are gathered, multiplied by the expert's weights streamed
// through two buffers, and scattered back to their rows of y.
#include <jal/kernels/library/expert_gemm.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <limits>
#include <vector>

#include <jal/isa/numerics.hpp>

#include "checks.hpp"
#include "emit.hpp"
#include "norm_rows.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear {

using namespace detail;

namespace {
// The bits of an F32 as the low word of an integer (VCLAMP bounds).
int64_t f32_bits_of(float v)
{
    uint32_t u = 0;
    std::memcpy(&u, &v, 4);
    return u;
}
constexpr uint32_t kL1 = JAL_SLICE_L1_BYTES;
constexpr uint32_t kWeightBudget = 1u << 20;
// Staged gathers (split by experts, converted activations): F32 rows per staging block.
constexpr uint32_t kStageRows = 8;
}  // namespace

std::string expert_gemm_name(const ExpertGemmConfig& c)
{
    std::string name =
        "expert_gemm_dt" + std::to_string(c.weight) + "_" + numerics_name(c.numerics) + "_t" +
        std::to_string(c.tokens) + "k" + std::to_string(c.k) + "e" + std::to_string(c.experts) +
        "n" + std::to_string(c.n) + "k" + std::to_string(c.kdim) + (c.input_per_pair ? "_pp" : "") +
        (c.split == ExpertSplit::rows ? "_r" : "") + (c.swiglu ? "_glu" : "") +
        (c.x_dtype != JAL_DT_F32 ? "_xa" : "") +
        (c.y_dtype != JAL_DT_F32 ? "_y" + std::to_string(c.y_dtype) : "");
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
    // Split by rows with every pair in L1 at once: the slice's rows of several experts are
    // gathered into one W tile and streamed without a pause between experts (on slices
    // whose rows of an expert fit one tile; the others take the per-expert loop).
    bool streamed;
    uint64_t streamed_extra;  // the L1 that path needs beyond the chunk buffers
    // Split by experts with converted activations: a chunk's F32 rows are gathered, normed
    // and converted kStageRows at a time through two staging buffers, so only the converted
    // rows and the accumulator stay in L1 per pair (more pairs a chunk: each expert's
    // weights stream once for more rows).
    bool staged;
    // Split by experts: each slice lists only its own experts' pairs, each with one VTOPK over
    // all pairs (sort_own_pairs) instead of the scalar counting sort of every pair.
    bool vsort;
    uint64_t xrow;  // a row of x as it is gathered
    uint64_t yrow;  // a converted row of y (0: y is stored F32 from the accumulator)
};

ExpertPlan plan(const ExpertGemmConfig& c, const std::string& name)
{
    ExpertPlan p{};
    p.pairs = c.tokens * c.k;
    p.act = activation_dtype(c.weight, c.numerics);
    p.wrow = numerics::row_bytes(c.weight, c.kdim);
    p.arow = numerics::row_bytes(p.act, c.kdim);
    require(!(c.tokens == 0 || c.k == 0 || c.experts == 0 || c.n == 0 || c.kdim == 0 ||
              p.wrow == 0 || p.arow == 0 || p.pairs > 8192 || c.experts > 4096),
            name, "bad shape or format (at most 8192 pairs and 4096 experts)");
    require(!c.swiglu || (c.split == ExpertSplit::experts && c.n % 2 == 0), name,
            "the SwiGLU epilogue needs the split by experts and an even N");
    require((c.x_dtype == JAL_DT_F32 || (c.x_dtype == p.act && !c.rms_norm)) &&
                (c.split == ExpertSplit::experts ||
                 (c.x_dtype == JAL_DT_F32 && c.y_dtype == JAL_DT_F32)),
            name, "x in the activation format (no norm) or y converted need the split by experts");
    p.convert = p.act != JAL_DT_F32 && c.x_dtype == JAL_DT_F32;
    p.xrow = numerics::row_bytes(c.x_dtype, c.kdim);
    p.yrow = c.y_dtype == JAL_DT_F32 ? 0 : numerics::row_bytes(c.y_dtype, c.out_cols());
    require(c.y_dtype == JAL_DT_F32 || p.yrow != 0, name, "y's format needs whole blocks");
    // W tiles: tn rows of all K, two buffers.
    p.tn = static_cast<uint32_t>(
        std::min<uint64_t>(std::max<uint64_t>(1, kWeightBudget / 2 / p.wrow), 256));
    p.tn = std::min(p.tn, c.n);
    // L1: ids, two pair lists, the experts' counts and starts, the W buffers, the bias row,
    // then per pair row: x (F32), its conversion, and the accumulator of N columns.
    // With the fused norm: its weight, and per row its squares and scale. Sorted with vector
    // operations: the ids as F32, the keys, VTOPK's indices, the experts' numbers.
    p.vsort = c.split == ExpertSplit::experts && c.k <= 32;
    const uint64_t fixed =
        (p.vsort ? 3 * (uint64_t{p.pairs} * 4 + 64) + uint64_t{c.experts} * 4 + 4 * 64 : 0) +
        3 * (uint64_t{p.pairs} * 4 + 64) + 2 * (uint64_t{c.experts} * 4 + 64) +
        2 * (p.tn * p.wrow + 64) + (uint64_t{c.n} * 4 + 64) + 256 +
        (c.rms_norm ? uint64_t{c.kdim} * 4 + 3 * 64 : 0) +
        (c.swiglu ? kStageRows * uint64_t{c.n / 2} * 4 + 64 : 0);
    const uint64_t per_row = p.xrow + (p.convert ? p.arow : 0) + uint64_t{c.n} * 4 + p.yrow +
                             (c.rms_norm ? uint64_t{c.kdim} * 4 + 4 : 0);
    require(fixed + per_row <= kL1, name, "does not fit in L1");
    p.mc = static_cast<uint32_t>(std::min<uint64_t>(p.pairs, (kL1 - fixed) / per_row));
    p.staged = c.split == ExpertSplit::experts && p.convert;
    if (p.staged) {
        const uint64_t stage = 2 * (uint64_t{kStageRows} * c.kdim * 4 + 64) +
                               (c.rms_norm ? kStageRows * (uint64_t{c.kdim} * 4 + 4) : 0);
        const uint64_t staged_row = p.arow + uint64_t{c.n} * 4 + p.yrow;
        require(fixed + stage + staged_row <= kL1, name, "does not fit in L1");
        p.mc =
            static_cast<uint32_t>(std::min<uint64_t>(p.pairs, (kL1 - fixed - stage) / staged_row));
    }
    // Streaming: the experts' ids in sorted order, the active experts, two W-row index lists
    // and the bias rows of every pair.
    p.streamed_extra = (uint64_t{p.pairs} * 4 + 64) + (uint64_t{c.experts} * 4 + 64) +
                       2 * (uint64_t{p.tn} * 4 + 64) + (uint64_t{p.pairs} * p.tn * 4 + 64);
    p.streamed = c.split == ExpertSplit::rows && p.mc == p.pairs &&
                 fixed + p.streamed_extra + uint64_t{p.pairs} * per_row <= kL1;
    return p;
}

// The generator: bucket the pairs by expert, then per expert the slice works on, per chunk
// of the pairs that chose it, gather x, multiply by the slice's W tiles of that expert and
// scatter the rows (or, split by rows, the slice's columns of them) to y.
class ExpertGemmKernel {
public:
    ExpertGemmKernel(const ExpertGemmConfig& c, const std::string& name);
    CodeObject build();

private:
    void declare();
    void layout();
    void load_ids();
    void sort_pairs();
    void sort_own_pairs(X e_lo, X e_hi);
    void list_own_pairs(X e, X run, X np);
    void for_each_valid_pair(const std::function<void(X pr, X id)>& body);
    void expert_loop(X e_begin, X e_end, X w, X e_stride);
    void layout_streamed();
    void stream_rows(X w);
    void stream_load(X j, int buf, X na, X per_tile);
    void stream_body(X j, int buf, X na, X per_tile);
    void stream_finish();
    void even_share(X g, X na, X lo, X n, X t0, X t1);
    void norm_rows(X rows);
    void load_bias(X e);
    void chunk(X c0, X mc_reg);
    void gather_staged(X c0, X rows);
    void swiglu_rows(X rows);
    void stage_block(X c0, X rows, X j, int buf);
    void multiply(X rows);
    X tile_rows(X i);
    void scatter(X c0, X rows);
    void store_row(X slot, X acc_row, uint32_t acc_stride);

    const ExpertGemmConfig& c;
    const ExpertPlan p;
    const bool by_rows;
    Builder b;
    X x{}, x_stride{}, norm_w{}, ids{}, w_shards{}, w_stride{}, expert_stride{}, bias{}, y{},
        y_stride{};
    SliceShare share{};
    X w_exp{}, first{}, cnt{};  // the expert's first row of W; its pairs' place in the lists
    X col0{}, ncols{};          // the columns of y this slice writes
    X nvalid{};                 // streamed: pairs whose expert is in [0, E)
    X nactive{};                // streamed: experts with pairs (talist)
    uint32_t l1_ids = 0, l1_plist = 0, l1_glist = 0, l1_count = 0, l1_start = 0, l1_w[2] = {};
    uint32_t l1_bias = 0, l1_x = 0, l1_a = 0, l1_acc = 0, l1_y = 0;
    uint32_t l1_elist = 0, l1_alist = 0, l1_widx[2] = {}, l1_brows = 0;  // streamed only
    T telist{}, talist{}, twidx{}, tbrows{};
    uint32_t l1_nw = 0, l1_sq = 0, l1_sc = 0;  // the fused norm's weight and scratch
    uint32_t l1_glu = 0;                       // the SwiGLU's σ, kStageRows rows
    uint32_t l1_vids = 0, l1_vkey = 0, l1_vidx = 0, l1_viota = 0, l1_vone = 0, l1_vsum = 0;
    T tnw{};
    Q qn{};
    T tids{}, tplist{}, tglist{}, tcount{}, tstart{}, tgidx{}, tx{}, ta{}, tw[2] = {}, tbias{};
    T tacc{}, tsub{};
    Q qio{}, qw[2] = {}, qst{};
    X one{}, four{}, kdim{}, experts{}, stores{};
};

ExpertGemmKernel::ExpertGemmKernel(const ExpertGemmConfig& config, const std::string& name)
    : c(config), p(plan(config, name)), by_rows(config.split == ExpertSplit::rows), b(name)
{}

void ExpertGemmKernel::declare()
{
    x = b.arg("x", JAL_ARG_ADDRESS);
    x_stride = b.arg("x_stride");
    if (c.rms_norm) norm_w = b.arg("norm_weight", JAL_ARG_ADDRESS);
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
    l1_count = b.l1_alloc(c.experts * 4), l1_start = b.l1_alloc(c.experts * 4);
    l1_w[0] = b.l1_alloc(static_cast<uint32_t>(p.tn * p.wrow));
    l1_w[1] = b.l1_alloc(static_cast<uint32_t>(p.tn * p.wrow));
    l1_bias = b.l1_alloc(c.n * 4);
    // Staged: two staging buffers of kStageRows F32 rows (l1_x, then the second).
    const uint32_t x_rows = p.staged ? 2 * kStageRows : p.mc;
    l1_x = b.l1_alloc(static_cast<uint32_t>(x_rows * p.xrow));
    if (p.yrow) l1_y = b.l1_alloc(static_cast<uint32_t>(p.mc * p.yrow));
    l1_a = p.convert ? b.l1_alloc(static_cast<uint32_t>(p.mc * p.arow)) : l1_x;
    l1_acc = b.l1_alloc(p.mc * c.n * 4);
    tids = b.t(), tplist = b.t(), tglist = b.t(), tcount = b.t(), tstart = b.t(), tgidx = b.t(),
    tx = b.t(), ta = p.convert ? b.t() : tx;
    tw[0] = b.t(), tw[1] = b.t(), tbias = b.t(), tacc = b.t(), tsub = b.t();
    qio = b.q(), qw[0] = b.q(), qw[1] = b.q(), qst = b.q();
    if (c.swiglu) l1_glu = b.l1_alloc(kStageRows * (c.n / 2) * 4);
    if (p.vsort) {
        l1_vids = b.l1_alloc(pairs * 4), l1_vkey = b.l1_alloc(pairs * 4);
        l1_vidx = b.l1_alloc(pairs * 4), l1_viota = b.l1_alloc(c.experts * 4);
        l1_vone = b.l1_alloc(4), l1_vsum = b.l1_alloc(8);
    }
    if (c.rms_norm) {
        l1_nw = b.l1_alloc(c.kdim * 4);
        const uint32_t norm_rows = p.staged ? kStageRows : p.mc;
        l1_sq = b.l1_alloc(norm_rows * c.kdim * 4);
        l1_sc = b.l1_alloc(norm_rows * 4);
        tnw = b.t(), qn = b.q();
    }
}

// The fused norm of `rows` gathered F32 rows in tx, in place (the weight's load waited for
// once before). Scratch tiles borrow tsub and tgidx, free between a gather and the MMA.
void ExpertGemmKernel::norm_rows(X rows)
{
    emit_tdesc_at(b, tsub, l1_sq, rows, kdim, JAL_DT_F32);
    emit_tdesc_at(b, tgidx, l1_sc, rows, one, JAL_DT_F32);
    emit_rms_norm_rows(b, tx, tsub, tgidx, tnw, c.kdim, c.norm_eps);
}

// Every pair's expert id into tids (the pair lists' tiles described alongside).
void ExpertGemmKernel::load_ids()
{
    X np = emit_const(b, p.pairs);
    emit_tdesc_at(b, tids, l1_ids, np, one, JAL_DT_I32);
    emit_tdesc_at(b, tplist, l1_plist, np, one, JAL_DT_I32);
    emit_tdesc_at(b, tglist, l1_glist, np, one, JAL_DT_I32);
    emit_tdesc_at(b, tcount, l1_count, experts, one, JAL_DT_I32);
    emit_tdesc_at(b, tstart, l1_start, experts, one, JAL_DT_I32);
    b.tload(tids, ids, four, qio);
    b.wait(qio, 1);
    b.free(np);
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
        b.twrite(pr, tplist, at, 0);
        if (c.input_per_pair) {
            b.twrite(pr, tglist, at, 0);
        } else {
            X kk = emit_const(b, c.k);
            b.divu(row, pr, kk);
            b.free(kk);
            b.twrite(row, tglist, at, 0);
        }
        if (p.streamed) b.twrite(id, telist, at, 0);
        b.addi(at, at, 1);
        b.twrite(at, tcount, id, 0);
        b.free(row);
        b.free(at);
    });
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

// The chunk's rows of the accumulator: ta times the slice's rows of the expert, in tiles
// of tn through two buffers.
void ExpertGemmKernel::multiply(X rows)
{
    X tiles = b.x(), tn = emit_const(b, p.tn);
    emit_ceil_div(b, tiles, ncols, tn, p.tn);
    b.free(tn);
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

// Row acc_row of the accumulator (rows acc_stride bytes apart) to the row of y of the pair
// at position `slot` of the sorted lists (the slice's columns of it).
void ExpertGemmKernel::store_row(X slot, X acc_row, uint32_t acc_stride)
{
    X dst = b.x(), a = b.x();
    b.tread(dst, tplist, slot, 0);
    b.mul(dst, dst, y_stride);
    b.add(dst, dst, y);
    b.muli(a, col0, 4);
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
        X half = emit_const(b, c.n / 2);
        b.tdesc(tsub, a, one, half, JAL_DT_F32);
        b.free(half);
    } else {
        b.tdesc(tsub, a, one, ncols, JAL_DT_F32);
    }
    emit_counted_store(b, tsub, dst, y_stride, qst, stores);
    b.free(a);
    b.free(dst);
}

// Each row of the accumulator to its pair's row of y (the slice's columns of it).
void ExpertGemmKernel::scatter(X c0, X rows)
{
    b.for_range(zero, rows, 1, [&](X r) {
        X slot = b.x();
        b.add(slot, r, c0);
        b.add(slot, slot, first);
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
    b.muli(r0, j, kStageRows);
    b.sub(nb, rows, r0);
    b.li(a, kStageRows);
    b.min(nb, nb, a);
    b.add(a, c0, first);
    b.add(a, a, r0);
    b.muli(a, a, 4);
    b.addi(a, a, static_cast<int32_t>(l1_glist));
    b.tdesc(tgidx, a, nb, one, JAL_DT_I32);
    emit_tdesc_at(b, tx, l1_x + buf * kStageRows * c.kdim * 4, nb, kdim, JAL_DT_F32);
    b.tgather(tx, x, x_stride, tgidx, qw[buf]);
    b.free(a);
    b.free(nb);
    b.free(r0);
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
            b.muli(r0, j, kStageRows);
            b.sub(nb, rows, r0);
            b.li(a, kStageRows);
            b.min(nb, nb, a);
            emit_tdesc_at(b, tx, l1_x + buf * kStageRows * c.kdim * 4, nb, kdim, JAL_DT_F32);
            if (c.rms_norm) norm_rows(nb);
            b.muli(a, r0, static_cast<int32_t>(p.arow));
            b.addi(a, a, static_cast<int32_t>(l1_a));
            b.tdesc(ta, a, nb, kdim, p.act);
            b.vcvt(ta, tx, activation_cvt_mode(c.numerics));
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
        // the VCLAMP bounds, in the registers the descriptions no longer need
        b.li(nb, f32_bits_of(-std::numeric_limits<float>::infinity()));
        b.li(a, f32_bits_of(c.swiglu_limit));
        b.vclamp(tg, tg, nb, a);  // min(g, limit): the gate is clamped above only
        b.li(nb, f32_bits_of(-c.swiglu_limit));
        b.vclamp(tu, tu, nb, a);
        b.vscale(tt, tg, c.swiglu_alpha);
        b.vsigmoid(tt, tt);
        b.vmul(tg, tg, tt);
        b.vadds(tu, tu, 1.0f);
        b.vmul(tg, tg, tu);
        b.free(half);
        b.free(a);
        b.free(nb);
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
        b.add(a, c0, first);
        b.muli(a, a, 4);
        b.addi(a, a, static_cast<int32_t>(l1_glist));
        b.tdesc(tgidx, a, rows, one, JAL_DT_I32);
        b.free(a);
    }
    if (p.staged) {
        gather_staged(c0, rows);
    } else {
        emit_tdesc_at(b, tx, l1_x, rows, kdim, c.x_dtype);
        b.tgather(tx, x, x_stride, tgidx, qio);
        b.wait(qio, 1);
        if (c.rms_norm) norm_rows(rows);
        if (p.convert) {
            emit_tdesc_at(b, ta, l1_a, rows, kdim, p.act);
            b.vcvt(ta, tx, activation_cvt_mode(c.numerics));
        }
    }
    emit_tdesc_at(b, tacc, l1_acc, rows, ncols, JAL_DT_F32, c.n * 4);
    b.vfill(tacc, 0.0f);
    multiply(rows);
    if (c.bias) b.vadd(tacc, tacc, tbias);
    if (c.swiglu) swiglu_rows(rows);
    if (p.yrow) {  // the rows converted at once (the accumulator's rows are c.n apart)
        X cols = emit_const(b, c.out_cols());
        emit_tdesc_at(b, tsub, l1_acc, rows, cols, JAL_DT_F32, c.n * 4);
        emit_tdesc_at(b, tx, l1_y, rows, cols, c.y_dtype);
        b.vcvt(tx, tsub, activation_cvt_mode(c.numerics));
        b.free(cols);
    }
    scatter(c0, rows);
    b.free(rows);
}

// Experts e in [e, e_end), w_exp (starting as w) at each one's first row of the slice's W.
void ExpertGemmKernel::expert_loop(X e, X e_end, X w, X e_stride)
{
    w_exp = w, first = b.x(), cnt = b.x();
    Label next_expert = b.label(), top = b.label(), all_done = b.label();
    b.bind(top);
    b.bge(e, e_end, all_done);
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

void ExpertGemmKernel::layout_streamed()
{
    l1_elist = b.l1_alloc(p.pairs * 4), l1_alist = b.l1_alloc(c.experts * 4);
    l1_widx[0] = b.l1_alloc(p.tn * 4), l1_widx[1] = b.l1_alloc(p.tn * 4);
    l1_brows = b.l1_alloc(p.pairs * p.tn * 4);
    // Tile registers are 16: the bias row and the x-row list's tiles (used by the per-expert
    // loop and the sort) are described anew for the bias rows and the active experts.
    telist = b.t(), twidx = b.t(), tbrows = tbias, talist = tglist;
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
void ExpertGemmKernel::stream_load(X j, int buf, X na, X per_tile)
{
    X a0 = b.x(), g_end = b.x(), rows = b.x();
    b.mul(a0, j, per_tile);
    b.add(g_end, a0, per_tile);
    b.min(g_end, g_end, na);
    b.sub(rows, g_end, a0);
    b.mul(rows, rows, ncols);
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
    b.tgather(tw[buf], w_exp, w_stride, twidx, qw[buf]);
    b.free(rows);
    b.free(g_end);
    b.free(a0);
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
        b.muli(a, lo, static_cast<int32_t>(p.tn * 4));
        b.addi(a, a, static_cast<int32_t>(l1_acc));
        b.tdesc(tsub, a, n, ncols, JAL_DT_F32, p.tn * 4);
        b.muli(a, lo, static_cast<int32_t>(p.arow));
        b.addi(a, a, static_cast<int32_t>(l1_a));
        b.tdesc(ta, a, n, kdim, p.act);
        b.sub(e, g, a0);
        b.mul(e, e, ncols);
        b.muli(e, e, static_cast<int32_t>(p.wrow));
        b.addi(e, e, static_cast<int32_t>(l1_w[buf]));
        b.tdesc(tgidx, e, ncols, kdim, c.weight);
        b.mma(tsub, ta, tgidx);
        b.free(a);
        b.free(n);
        b.free(lo);
        b.free(e);
    });
    b.free(g_end);
    b.free(a0);
}

// Bias rows added, each pair's row (the slice's columns of it) stored where it goes.
void ExpertGemmKernel::stream_finish()
{
    X np = nvalid;
    emit_tdesc_at(b, tacc, l1_acc, np, ncols, JAL_DT_F32, p.tn * 4);
    if (c.bias) {
        b.wait(qio, 1);
        emit_tdesc_at(b, tbrows, l1_brows, np, ncols, JAL_DT_F32, p.tn * 4);
        b.vadd(tacc, tacc, tbrows);
    }
    b.for_range(zero, np, 1, [&](X r) { store_row(r, r, p.tn * 4); });
}

// Split by rows, every pair in L1: all pairs' activations gathered in sorted order once,
// their bias rows gathered alongside, then the active experts' rows streamed through two
// W buffers, as many whole experts per tile as fit (no pause between experts).
void ExpertGemmKernel::stream_rows(X w)
{
    w_exp = w;
    {
        // Timing only, the ids read as zeros (no tile is filled), so the sort would put every
        // pair on one expert. The dispatch is charged instead for the pairs spread evenly
        // over the experts uniform routing makes active (uniform_active()): the same
        // instructions, tiles and transfers as a real run with those ids.
        Label real = b.label();
        X timing = b.x();
        b.movsr(timing, JAL_SR_TIMING_ONLY);
        b.beq(timing, zero, real);
        b.li(nvalid, p.pairs);
        b.li(nactive, uniform_active(c));
        b.bind(real);
        b.free(timing);
    }
    Label nothing = b.label();
    b.beq(nvalid, zero, nothing);  // no pair chose a valid expert: y is not written
    X na = nactive;  // listed in talist by the sort (described again: it borrows tglist)
    emit_tdesc_at(b, talist, l1_alist, experts, one, JAL_DT_I32);
    X np = nvalid;
    emit_tdesc_at(b, tgidx, l1_glist, np, one, JAL_DT_I32);
    emit_tdesc_at(b, tx, l1_x, np, kdim, JAL_DT_F32);
    b.tgather(tx, x, x_stride, tgidx, qio);
    if (c.bias) {
        // Row of pair i: expert elist[i]'s bias from column col0.
        X base = b.x(), rb = emit_const(b, c.n * 4);
        b.muli(base, col0, 4);
        b.add(base, base, bias);
        emit_tdesc_at(b, tbrows, l1_brows, np, ncols, JAL_DT_F32, p.tn * 4);
        emit_tdesc_at(b, telist, l1_elist, np, one, JAL_DT_I32);
        b.tgather(tbrows, base, rb, telist, qio);
        b.free(rb);
        b.free(base);
    }
    emit_tdesc_at(b, tacc, l1_acc, np, ncols, JAL_DT_F32, p.tn * 4);
    b.vfill(tacc, 0.0f);
    X per_tile = b.x(), tiles = b.x(), tn = emit_const(b, p.tn);
    b.divu(per_tile, tn, ncols);  // ≥ 1: ncols ≤ tn here
    b.free(tn);
    b.add(tiles, na, per_tile);
    b.addi(tiles, tiles, -1);
    b.divu(tiles, tiles, per_tile);
    emit_double_buffered(
        b, tiles, [&](X j, int buf) { stream_load(j, buf, na, per_tile); },
        [&](X j, int buf) { stream_body(j, buf, na, per_tile); },
        [&] {
            b.wait(qio, 1);  // the activations, while the first W tile loads
            if (c.rms_norm) norm_rows(np);
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

// Split by experts, slice s takes experts slice_range(E) at full width; split by rows, it
// takes every expert but only its rows slice_range(N) of each, which are stored together
// (expert e's at e·count rows into the slice's block).
CodeObject ExpertGemmKernel::build()
{
    declare();
    share = emit_slice_range(b, by_rows ? c.n : c.experts);
    const Label done = emit_skip_if_empty(b, share.count);
    X w = emit_table_entry(b, w_shards, share.slice);
    b.free(w_shards);
    b.free(share.slice);
    layout();
    one = emit_const(b, 1);
    four = emit_const(b, 4);
    kdim = emit_const(b, c.kdim);
    experts = emit_const(b, c.experts);
    stores = emit_const(b, 0);
    if (p.streamed) layout_streamed();
    if (c.rms_norm) {  // the norm weight loads while the pairs are sorted
        X stride = emit_const(b, int64_t{c.kdim} * 4);
        emit_tdesc_at(b, tnw, l1_nw, one, kdim, JAL_DT_F32);
        b.tload(tnw, norm_w, stride, qn);
        b.free(stride);
        b.free(norm_w);
    }
    load_ids();
    if (p.vsort) {
        X e_hi = b.x();
        b.add(e_hi, share.begin, share.count);
        sort_own_pairs(share.begin, e_hi);
        b.free(e_hi);
    } else {
        sort_pairs();
    }
    if (c.rms_norm) b.wait(qn, 1);
    if (by_rows) col0 = share.begin, ncols = share.count;
    Label generic = b.label();
    if (p.streamed) {
        // Slices whose rows of an expert fit one W tile stream; the others loop per expert.
        X tn = emit_const(b, p.tn);
        b.blt(tn, share.count, generic);
        b.free(tn);
        stream_rows(w);
        b.jmp(done);
    }
    b.bind(generic);
    X e{}, e_end{};
    if (by_rows) {
        e = emit_const(b, 0), e_end = experts;
        b.mul(expert_stride, ncols, w_stride);
    } else {
        col0 = zero, ncols = emit_const(b, c.n);
        e = share.begin, e_end = b.x();
        b.add(e_end, share.begin, share.count);
        b.free(share.count);
    }
    expert_loop(e, e_end, w, expert_stride);
    return emit_finish(b, qst, stores, done);
}

}  // namespace

uint32_t uniform_expert(uint32_t experts, uint32_t k, uint32_t t, uint32_t j)
{
    const uint32_t span = std::max<uint32_t>(1, experts / k);
    return (j * span + t % span) % experts;
}

uint32_t uniform_active(const ExpertGemmConfig& c)
{
    std::vector<bool> on(c.experts, false);
    // Tokens repeat their choices every ⌊E/k⌋ tokens.
    const uint32_t span = std::max<uint32_t>(1, c.experts / c.k);
    for (uint32_t t = 0; t < std::min(c.tokens, span); t++)
        for (uint32_t j = 0; j < c.k; j++) on[uniform_expert(c.experts, c.k, t, j)] = true;
    return static_cast<uint32_t>(std::count(on.begin(), on.end(), true));
}

bool expert_gemm_streams(const ExpertGemmConfig& c, uint32_t slices)
{
    ExpertGemmConfig rows = c;
    rows.split = ExpertSplit::rows;
    const ExpertPlan p = plan(rows, expert_gemm_name(rows));
    return slices > 0 && p.streamed && ceil_div(c.n, slices) <= p.tn;
}

CodeObject build_expert_gemm(const ExpertGemmConfig& c)
{
    return ExpertGemmKernel(c, expert_gemm_name(c)).build();
}

}  // namespace jal::kernels::linear
