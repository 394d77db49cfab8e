// Grouped expert GEMM (expert_gemm.hpp): the pairs are bucketed by expert once (a counting
// sort in L1), then per expert the slice works on (its own experts, or its rows of every
// expert) the pairs that chose it are gathered, multiplied by the expert's weights streamed
// through two buffers, and scattered back to their rows of y.
#include <jal/kernels/library/expert_gemm.hpp>

#include <algorithm>
#include <functional>
#include <vector>

#include <jal/isa/numerics.hpp>

#include "checks.hpp"
#include "emit.hpp"
#include "expert_gemm_kernel.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear {

using namespace detail;

std::string expert_gemm_name(const ExpertGemmConfig& c)
{
    std::string name =
        "expert_gemm_dt" + std::to_string(c.weight) + "_" + numerics_name(c.numerics) + "_t" +
        std::to_string(c.tokens) + "k" + std::to_string(c.k) + "e" + std::to_string(c.experts) +
        "n" + std::to_string(c.n) + "k" + std::to_string(c.kdim) + (c.input_per_pair ? "_pp" : "") +
        (c.split == ExpertSplit::rows ? "_r" : "") + (c.swiglu ? "_glu" : "") +
        (c.x_dtype != JAL_DT_F32 ? "_xa" : "") +
        (c.y_dtype != JAL_DT_F32 ? "_y" + std::to_string(c.y_dtype) : "") +
        (c.swiglu_input ? "_sw" : "") + (c.route ? "_rt" : "") + (c.combine ? "_cb" : "") +
        (c.send_output ? "_tx" : "") + (c.recv_input ? "_rx" : "") +
        (c.send_residual ? "_sr" : "") + (c.recv_logits ? "_rl" : "") + (c.recv_x ? "_rr" : "") +
        (c.prefetch_n ? "_pf" : "") + (c.w0_prefetched ? "_w0" : "") +
        (c.x_from_self ? "_xs" : "") + (c.send_x_columns ? "_sxc" : "") +
        (c.recv_x_columns ? "_rxc" : "");
    return name.substr(0, 63);
}

uint64_t expert_gemm_flops(const ExpertGemmConfig& c)
{
    uint64_t pairs = uint64_t{c.tokens} * c.k;
    return pairs * (2ull * c.n * c.kdim + (c.bias ? c.n : 0));
}

namespace detail {

namespace {

// Split by experts, the next chunk's gather in flight (ExpertPlan::prefetch) takes more L1 a
// pair: staged, every F32 row of a chunk instead of the two staging buffers (the norm's
// scratch still kStageRows rows); x gathered as the MMA reads it (no norm, SwiGLU or
// conversion), a second buffer of a chunk's rows. Taken when chunks keep kPrefetchPairs pairs
// (or as many as without).
void plan_prefetch(ExpertPlan& p, const ExpertGemmConfig& c, uint64_t fixed, uint64_t per_row)
{
    if (c.split != ExpertSplit::experts || c.swiglu_input || (!p.staged && c.rms_norm)) return;
    const uint64_t base =
        fixed + 64 + (p.staged && c.rms_norm ? kStageRows * (uint64_t{c.kdim} * 4 + 4) : 0);
    const uint64_t row = p.staged ? p.arow + uint64_t{c.n} * 4 + p.yrow + p.xrow : per_row + p.xrow;
    const uint64_t mc = base + row <= kL1 ? std::min<uint64_t>(p.pairs, (kL1 - base) / row) : 0;
    p.prefetch = mc >= std::min(p.mc, kPrefetchPairs);
    if (p.prefetch) p.mc = static_cast<uint32_t>(mc);
}

}  // namespace

namespace {

// The SwiGLU epilogue's σ scratch: kStageRows rows of N/2 split by experts, every pair's
// half of a W tile's columns split by rows.
uint64_t glu_scratch(const ExpertGemmConfig& c, const ExpertPlan& p)
{
    if (c.split == ExpertSplit::rows) return uint64_t{p.pairs} * ((p.tn + 1) / 2) * 4;
    return uint64_t{kStageRows} * (c.n / 2) * 4;
}

}  // namespace

namespace {

// What hands rows, logits or weights to the kernel after it, or takes them from the one
// before (the messages and the prefetched tile), needs of the configuration and the plan.
void check_handovers(const ExpertGemmConfig& c, const ExpertPlan& p, const std::string& name)
{
    require(!c.send_output || (c.split == ExpertSplit::rows && c.swiglu && c.route), name,
            "rows sent as messages need the split by rows, the SwiGLU epilogue and the routing");
    require(!c.recv_input ||
                (c.split == ExpertSplit::rows && c.input_per_pair && c.combine && !c.route &&
                 c.x_dtype == JAL_DT_F32 && !c.swiglu_input && !c.rms_norm),
            name,
            "rows received as messages need the split by rows, input_per_pair, the combine, F32 "
            "x, and no routing of its own");
    require(!(c.recv_logits || c.recv_x) || (c.route && c.split == ExpertSplit::rows), name,
            "the logits or rows received need the routing and the split by rows");
    require(!c.recv_x || p.token_rows, name,
            "rows received need few pairs, streamed, one row a token");
    require(!c.prefetch_n || (c.send_output && p.streamed &&
                              numerics::row_bytes(c.prefetch_weight, c.prefetch_kdim) != 0),
            name, "issuing the next kernel's W needs the rows sent, streamed, and whole blocks");
    require(!c.w0_prefetched || (c.recv_input && p.streamed), name,
            "a prefetched first W tile needs the rows received, streamed");
    require(!c.x_from_self || c.recv_x, name, "x from this slice without receiving x");
    require(!c.send_x_columns || (c.recv_x && c.send_output), name,
            "sending x's columns needs x received and the rows sent");
    require(!c.recv_x_columns || (c.recv_input && c.combine), name,
            "receiving x's columns needs the rows received and the combine");
}

}  // namespace

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
    require(!c.bias_shards || (c.bias && c.split == ExpertSplit::experts), name,
            "per-slice bias tables need the bias and the split by experts");
    require(!c.swiglu || (c.n % 2 == 0 && !c.combine && !c.swiglu_input), name,
            "the SwiGLU epilogue needs an even N, and not the combine or the input's SwiGLU");
    require((c.x_dtype == JAL_DT_F32 || (c.x_dtype == p.act && !c.rms_norm)) &&
                (c.split == ExpertSplit::experts ||
                 (c.x_dtype == JAL_DT_F32 && c.y_dtype == JAL_DT_F32)),
            name, "x in the activation format (no norm) or y converted need the split by experts");
    require(!c.swiglu_input || (c.input_per_pair && !c.rms_norm && c.x_dtype == JAL_DT_F32), name,
            "the input's SwiGLU needs input_per_pair, F32 x and no fused norm");
    require(!c.route || !c.input_per_pair, name, "the fused routing needs one x row a token");
    require(!c.combine || (c.input_per_pair && c.split == ExpertSplit::rows), name,
            "the fused combine needs input_per_pair and the split by rows");
    p.convert = p.act != JAL_DT_F32 && c.x_dtype == JAL_DT_F32;
    p.xrow = numerics::row_bytes(c.x_dtype, c.kdim);
    p.yrow = c.y_dtype == JAL_DT_F32 ? 0 : numerics::row_bytes(c.y_dtype, c.out_cols());
    require(c.y_dtype == JAL_DT_F32 || p.yrow != 0, name, "y's format needs whole blocks");
    // W tiles: tn rows of all K, two buffers.
    p.tn = expert_tile_rows(c.n, p.wrow);
    // L1: ids, two pair lists, the experts' counts and starts, the W buffers, the bias row,
    // then per pair row: x (F32), its conversion, and the accumulator of N columns.
    // With the fused norm: its weight, and per row its squares and scale. Sorted with vector
    // operations: the ids as F32, the keys, VTOPK's indices, the experts' numbers.
    p.vsort = c.split == ExpertSplit::experts && c.k <= 32;
    p.fsort = c.split == ExpertSplit::rows && p.pairs <= kFewSortPairs;
    const uint64_t fixed =
        (p.vsort ? 3 * (uint64_t{p.pairs} * 4 + 64) + uint64_t{c.experts} * 4 + 4 * 64 : 0) +
        (p.fsort ? 2 * (uint64_t{p.pairs} * 4 + 64) : 0) + 3 * (uint64_t{p.pairs} * 4 + 64) +
        2 * (uint64_t{c.experts} * 4 + 64) + 2 * (p.tn * p.wrow + 64) + (uint64_t{c.n} * 4 + 64) +
        256 + (c.rms_norm ? uint64_t{c.kdim} * 4 + 3 * 64 : 0) +
        (c.swiglu ? glu_scratch(c, p) + 64 : 0) +
        // the fused routing: the logits, the weights and two scratch columns
        (c.route ? uint64_t{c.tokens} * (c.experts + c.k + 2) * 4 + 3 * 64 : 0) +
        (c.recv_input ? uint64_t{c.tokens} * c.k * 4 + 64 : 0);  // the received weights
    // The input's SwiGLU gathers gate | up rows (twice x's width) and needs F32 scratch.
    const uint64_t per_row = p.xrow + (p.convert ? p.arow : 0) + uint64_t{c.n} * 4 + p.yrow +
                             (c.rms_norm ? uint64_t{c.kdim} * 4 + 4 : 0) +
                             (c.swiglu_input ? 3 * uint64_t{c.kdim} * 4 : 0);
    require(fixed + per_row <= kL1, name, "does not fit in L1");
    p.mc = static_cast<uint32_t>(std::min<uint64_t>(p.pairs, (kL1 - fixed) / per_row));
    p.staged = c.split == ExpertSplit::experts && p.convert && !c.swiglu_input;
    if (p.staged) {
        const uint64_t stage = 2 * (uint64_t{kStageRows} * c.kdim * 4 + 64) +
                               (c.rms_norm ? kStageRows * (uint64_t{c.kdim} * 4 + 4) : 0);
        const uint64_t staged_row = p.arow + uint64_t{c.n} * 4 + p.yrow;
        require(fixed + stage + staged_row <= kL1, name, "does not fit in L1");
        p.mc =
            static_cast<uint32_t>(std::min<uint64_t>(p.pairs, (kL1 - fixed - stage) / staged_row));
    }
    plan_prefetch(p, c, fixed, per_row);
    // Streaming: the experts' ids in sorted order, the active experts, two W-row index lists
    // and the bias rows of every pair.
    // With the fused combine: the rows in pair order, the weights, the out rows and the sum.
    p.streamed_extra =
        (uint64_t{p.pairs} * 4 + 64) + (uint64_t{c.experts} * 4 + 64) +
        2 * (uint64_t{p.tn} * 4 + 64) + (uint64_t{p.pairs} * p.tn * 4 + 64) +
        (c.combine ? uint64_t{p.pairs} * (p.tn + 1) * 4 + 2 * uint64_t{c.tokens} * p.tn * 4 + 4 * 64
                   : 0);
    p.streamed = c.split == ExpertSplit::rows && p.mc == p.pairs &&
                 fixed + p.streamed_extra + uint64_t{p.pairs} * per_row <= kL1;
    p.token_rows = p.streamed && p.fsort && !c.input_per_pair;
    check_handovers(c, p, name);
    return p;
}

uint32_t expert_tile_rows(uint32_t n, uint64_t wrow)
{
    const uint64_t tn = std::min<uint64_t>(std::max<uint64_t>(1, kWeightBudget / 2 / wrow), 256);
    return static_cast<uint32_t>(std::min<uint64_t>(tn, n));
}

ExpertGemmKernel::ExpertGemmKernel(const ExpertGemmConfig& config, const std::string& name)
    : c(config), p(plan(config, name)), by_rows(config.split == ExpertSplit::rows), b(name)
{
    if (c.prefetch_n)
        region = expert_gemm_prefetch_region(c.prefetch_n, c.prefetch_kdim, c.prefetch_weight);
    if (c.w0_prefetched) region = expert_gemm_prefetch_region(c.n, c.kdim, c.weight);
}

void ExpertGemmKernel::declare()
{
    // Receiving its routing and rows, the kernel reads neither x nor ids and writes no y:
    // its arguments then fit one scalar-cache line.
    // Likewise what comes as messages (recv_x, recv_logits) or goes as messages (send_output).
    const bool io = !c.recv_input;
    if (io && !c.recv_x) x = b.arg("x", JAL_ARG_ADDRESS), x_stride = b.arg("x_stride");
    if (c.rms_norm) norm_w = b.arg("norm_weight", JAL_ARG_ADDRESS);
    if (io) ids = b.arg("ids", JAL_ARG_ADDRESS);
    if (c.route) {
        if (!c.recv_logits) {
            logits = b.arg("logits", JAL_ARG_ADDRESS);
            logits_stride = b.arg("logits_stride");
        }
        weights = b.arg("weights", JAL_ARG_ADDRESS);
    }
    w_shards = b.arg("w_shards", JAL_ARG_ADDRESS);
    w_stride = b.arg("w_stride");
    expert_stride = b.arg("expert_stride");
    if (c.bias) bias = b.arg("bias", JAL_ARG_ADDRESS);
    if (io && !c.send_output) y = b.arg("y", JAL_ARG_ADDRESS), y_stride = b.arg("y_stride");
    if (c.prefetch_n) b.free(b.arg("next_w_shards", JAL_ARG_ADDRESS));  // read again at use
    if (c.recv_logits || c.recv_x) b.after_messages_hint();
    // The fused combine's arguments (out, out_stride, weights) come last and are read where
    // they are used (combine_rows): the kernel is short of registers.
    if (c.recv_input) {
        b.after_messages_hint();
        // Its routing is in its FIFO already, so the shard table's entry is all its first W
        // tile waits for: the stage before reads that line ahead (link_stages).
        b.slice_table_hint("w_shards");
    }
    b.acquire();  // the arguments load while a staged program's previous stage finishes
}

void ExpertGemmKernel::layout()
{
    const uint32_t pairs = p.pairs;
    l1_ids = b.l1_alloc(pairs * 4), l1_plist = b.l1_alloc(pairs * 4),
    l1_glist = b.l1_alloc(pairs * 4);
    l1_count = b.l1_alloc(c.experts * 4), l1_start = b.l1_alloc(c.experts * 4);
    // Prefetched, the first W buffer is the tile the kernel before issued.
    l1_w[0] = c.w0_prefetched ? region.tile : b.l1_alloc(static_cast<uint32_t>(p.tn * p.wrow));
    l1_w[1] = b.l1_alloc(static_cast<uint32_t>(p.tn * p.wrow));
    l1_bias = b.l1_alloc(c.n * 4);
    // Staged: two staging buffers of kStageRows F32 rows (l1_x, then the second).
    const uint32_t x_rows = p.staged && !p.prefetch ? 2 * kStageRows : p.mc;
    l1_x = b.l1_alloc(static_cast<uint32_t>(x_rows * p.xrow));
    if (p.prefetch && !p.staged) l1_x2 = b.l1_alloc(static_cast<uint32_t>(p.mc * p.xrow));
    if (p.yrow) l1_y = b.l1_alloc(static_cast<uint32_t>(p.mc * p.yrow));
    l1_a = p.convert ? b.l1_alloc(static_cast<uint32_t>(p.mc * p.arow)) : l1_x;
    l1_acc = b.l1_alloc(p.mc * c.n * 4);
    if (c.swiglu_input) {
        l1_gu = b.l1_alloc(p.mc * c.kdim * 8);
        l1_sw = b.l1_alloc(p.mc * c.kdim * 4);
    }
    if (c.recv_input) {
        qr = b.q();
        l1_rw = b.l1_alloc(c.tokens * c.k * 4);  // the routing weights, received
    }
    if (c.route) {
        l1_logits = b.l1_alloc(c.tokens * c.experts * 4);
        l1_rw = b.l1_alloc(c.tokens * c.k * 4);
        l1_rs = b.l1_alloc(c.tokens * 2 * 4);
    }
    tids = b.t(), tplist = b.t(), tglist = b.t(), tcount = b.t(), tstart = b.t(), tgidx = b.t(),
    tx = b.t(), ta = p.convert ? b.t() : tx;
    tw[0] = b.t(), tw[1] = b.t(), tbias = b.t(), tacc = b.t(), tsub = b.t();
    qio = b.q(), qw[0] = b.q(), qw[1] = b.q(), qst = b.q();
    if (p.prefetch) qg = b.q();
    if (p.token_rows) qt = b.q();  // issued before layout_streamed
    if (c.swiglu) l1_glu = b.l1_alloc(static_cast<uint32_t>(glu_scratch(c, p)));
    if (p.fsort) l1_vids = b.l1_alloc(pairs * 4), l1_vidx = b.l1_alloc(pairs * 4);
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

// Split by experts, slice s takes experts slice_range(E) at full width; split by rows, it
// takes every expert but only its rows slice_range(N) of each, which are stored together
// (expert e's at e·count rows into the slice's block).
CodeObject ExpertGemmKernel::build()
{
    declare();
    share = emit_slice_range(b, by_rows ? c.n : c.experts);
    if (c.send_output || c.recv_input || c.recv_logits || c.recv_x) {
        // Every slice sends its routing to itself and its rows to every slice, and receives
        // from every slice: one without rows of N would break the exchange.
        Label some = b.label();
        b.bne(share.count, zero, some);
        b.trap(JAL_STATUS_INVALID_FIELD);
        b.bind(some);
    }
    const Label done = emit_skip_if_empty(b, share.count);
    layout();
    one = emit_const(b, 1);
    four = emit_const(b, 4);
    kdim = emit_const(b, c.kdim);
    experts = emit_const(b, c.experts);
    // The ids and the norm weight (needed once the pairs are sorted) load first: the shard
    // table's read overlaps them instead of delaying them.
    issue_ids();
    if (p.token_rows) issue_token_rows();
    if (c.rms_norm) {
        X stride = emit_const(b, int64_t{c.kdim} * 4);
        emit_tdesc_at(b, tnw, l1_nw, one, kdim, JAL_DT_F32);
        b.tload(tnw, norm_w, stride, qn);
        b.free(stride);
        b.free(norm_w);
    }
    X w = emit_table_entry(b, w_shards, share.slice);
    b.free(w_shards);
    if (c.bias_shards) {  // this slice's bias rows
        X own = emit_table_entry(b, bias, share.slice);
        b.free(bias);
        bias = own;
    }
    b.free(share.slice);
    if (p.streamed) layout_streamed();
    finish_ids();
    if (p.vsort) {
        X e_hi = b.x();
        b.add(e_hi, share.begin, share.count);
        sort_own_pairs(share.begin, e_hi);
        b.free(e_hi);
    } else if (p.fsort) {
        sort_few_pairs();
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
    if (c.combine || (by_rows && c.swiglu) || c.recv_input)
        b.trap(JAL_STATUS_INVALID_FIELD);  // a slice that does not stream
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
    if (p.prefetch) {
        pipelined_loop(e, e_end, w, expert_stride);
    } else {
        expert_loop(e, e_end, w, expert_stride);
    }
    return finish(done);
}

CodeObject ExpertGemmKernel::finish(Label done)
{
    CodeObject co = emit_finish(b, done);
    if (c.prefetch_n || c.w0_prefetched) {  // its own L1 below the region, which it also uses
        require(co.l1_bytes <= region.list, co.name, "does not fit in L1 below the prefetch");
        co.l1_bytes = kL1;
    }
    return co;
}

}  // namespace detail

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

ExpertPrefetchRegion expert_gemm_prefetch_region(uint32_t n, uint32_t kdim, jal_dtype weight)
{
    const uint64_t wrow = numerics::row_bytes(weight, kdim);
    const uint32_t tn = expert_tile_rows(n, wrow);
    ExpertPrefetchRegion r;
    r.tile = static_cast<uint32_t>(kL1 - ceil_div(tn * wrow, 64) * 64);
    r.list = static_cast<uint32_t>(r.tile - ceil_div(uint64_t{tn} * 4, 64) * 64);
    return r;
}

bool expert_gemm_token_rows(const ExpertGemmConfig& c)
{
    ExpertGemmConfig loads = c;  // the plan refuses recv_x without token rows
    loads.recv_x = false;
    return plan(loads, expert_gemm_name(loads)).token_rows;
}

CodeObject build_expert_gemm(const ExpertGemmConfig& c)
{
    // Only a receiver of rows knows its receivers follow it on the same slices.
    require(!c.send_residual || c.recv_input, expert_gemm_name(c),
            "sending the residual needs recv_input");
    return ExpertGemmKernel(c, expert_gemm_name(c)).build();
}

}  // namespace jal::kernels::linear
