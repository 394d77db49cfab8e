// GEMV and GEMM (gemm.hpp): the generator. Each slice computes the columns of y that its
// rows of W give, streaming W through two tile buffers so HBM and the matrix engine overlap.
#include <jal/kernels/library/gemm.hpp>

#include <algorithm>
#include <cstring>
#include <functional>

#include <jal/error.hpp>
#include <jal/isa/numerics.hpp>

#include "emit.hpp"
#include "norm_rows.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear {

using namespace detail;

namespace {

constexpr uint32_t kL1 = JAL_SLICE_L1_BYTES;
constexpr uint32_t kAlign = 64;
constexpr int kWBuffers = 3;                   // W loads run two tiles ahead of the MMA
constexpr int kAccBuffers = 3;                 // a tile's store may still be reading one
constexpr uint32_t kWeightBudget = 3u << 19;   // all W buffers together, at most (1.5 MiB)
constexpr uint32_t kStageBudget = 768u << 10;  // both F32 staging buffers of x, at most
// In row groups (a prompt) L1 goes to x rather than W: every shard streams once per chunk of
// rows, so the more rows a chunk holds the fewer times W is read; W tiles of 32 rows and
// staging blocks of a quarter of the size still keep the engines overlapped.
constexpr uint32_t kGroupTileRows = 32;
constexpr uint32_t kGroupStageBudget = 192u << 10;

uint32_t aligned(uint64_t bytes)
{
    return static_cast<uint32_t>(ceil_div(bytes, kAlign) * kAlign);
}

[[noreturn]] void bad(const GemmConfig& c, const std::string& why)
{
    throw Error(JAL_STATUS_INVALID_FIELD, gemm_name(c) + ": " + why);
}

}  // namespace

std::string gemm_name(const GemmConfig& c)
{
    const char* w = "?";
    switch (c.weight) {
    case JAL_DT_MXFP4:
        w = "mxfp4";
        break;
    case JAL_DT_MXFP8_E4M3:
        w = "mxfp8";
        break;
    case JAL_DT_BF16:
        w = "bf16";
        break;
    case JAL_DT_F16:
        w = "f16";
        break;
    case JAL_DT_Q8_0:
        w = "q8_0";
        break;
    case JAL_DT_F32:
        w = "f32";
        break;
    default:
        break;
    }
    // At most 63 characters (the code object's name field).
    std::string name = "gemm_" + std::string(w) + "_" + numerics_name(c.numerics) + "_m" +
                       std::to_string(c.m) + "n" + std::to_string(c.n) + "k" + std::to_string(c.k);
    if (c.w_kmajor) name += "_km";
    if (c.bias) name += "_bias";
    if (c.rms_norm) name += "_norm";
    if (c.accumulate) name += "_acc";
    if (c.w_before_acquire) name += "_wb";
    if (c.recv_x) name += c.x_senders ? "_rxm" : "_rx";
    if (c.forward_x) name += "_fx";
    if (c.send_y) name += "_tx" + std::to_string(c.send_y);
    if (!c.store_y) name += "_ns";
    return name.substr(0, 63);
}

uint64_t gemm_flops(const GemmConfig& c)
{
    uint64_t f = 2ull * c.m * c.n * c.k;
    if (c.bias) f += uint64_t{c.m} * c.n;
    return f;
}

GemmPlan plan_gemm(const GemmConfig& c)
{
    if (c.m == 0 || c.n == 0 || c.k == 0) bad(c, "M, N and K must be at least 1");
    if (!weight_dtype_supported(c.weight))
        bad(c, "weights must be MXFP4, MXFP8_E4M3, BF16, F16, Q8_0 or F32");
    if (c.w_kmajor && c.weight != JAL_DT_F32 && c.weight != JAL_DT_BF16 && c.weight != JAL_DT_F16)
        bad(c, "K-major weights must be F32, BF16 or F16");
    GemmPlan p;
    p.activation = activation_dtype(c.weight, c.numerics);
    if (c.x_dtype != JAL_DT_F32 && c.x_dtype != p.activation)
        bad(c, "x must be F32 or already in the activation format");
    if (c.rms_norm && c.x_dtype != JAL_DT_F32) bad(c, "a fused RMS norm needs x in F32");
    if (c.rms_norm && c.accumulate) bad(c, "a fused RMS norm and accumulation together");
    if (c.row_groups == 0 || c.row_groups > 64) bad(c, "row groups must be 1..64");
    if (c.slice_tables && c.row_groups < 2) bad(c, "per-slice shard tables need row groups");
    // The rows one slice takes: all of M, or its row group's.
    const uint64_t group_m = ceil_div(c.m, c.row_groups);
    p.convert_x = c.x_dtype != p.activation;
    uint64_t wrow = numerics::row_bytes(c.weight, c.k);
    uint64_t xrow = numerics::row_bytes(p.activation, c.k);
    if (wrow == 0 || xrow == 0) bad(c, "K must be a multiple of 32 for block formats");

    // W rows per tile: a GEMV wants big DMA transfers; a GEMM keeps the accumulator small.
    uint64_t tn = c.tile_n;
    if (tn == 0) {
        tn = kWeightBudget / kWBuffers / wrow;
        tn = std::min<uint64_t>(tn, c.m <= 16 ? 1024 : c.row_groups > 1 ? kGroupTileRows : 128);
        if (tn >= 16) tn -= tn % 16;
    }
    tn = std::max<uint64_t>(1, std::min<uint64_t>(tn, c.n));
    if (kWBuffers * tn * wrow > kL1 / 2)
        bad(c, "a tile of W rows does not fit in L1 (K too large)");
    p.tile_n = static_cast<uint32_t>(tn);

    uint64_t used = kWBuffers * (aligned(tn * wrow) + (c.bias ? aligned(tn * 4) : 0));
    // The fused norm: its weight, and per normalised row its squares and its scale (per
    // staged row when x is converted, per resident row when it is not).
    const uint64_t norm_row = c.rms_norm ? uint64_t{c.k} * 4 + 4 : 0;
    if (c.rms_norm) used += aligned(uint64_t{c.k} * 4) + 2 * kAlign;
    if (p.convert_x) {
        const uint64_t budget = c.row_groups > 1 ? kGroupStageBudget : kStageBudget;
        uint64_t rs = std::max<uint64_t>(1, budget / 2 / (uint64_t{c.k} * 4));
        p.stage_rows = static_cast<uint32_t>(std::min<uint64_t>(rs, group_m));
        used += 2 * aligned(uint64_t{p.stage_rows} * c.k * 4) + p.stage_rows * norm_row;
    }
    // x rows resident at once: what is left after W, staging and the two accumulators.
    uint64_t left = kL1 > used + 4 * kAlign ? kL1 - used - 4 * kAlign : 0;
    // Accumulating: per W buffer, the tile of y it adds to.
    const uint64_t y_row = c.accumulate ? kWBuffers * tn * 4 : 0;
    uint64_t mc = std::min<uint64_t>(
        group_m, left / (xrow + kAccBuffers * tn * 4 + (p.convert_x ? 0 : norm_row) + y_row));
    if (c.max_m_chunk) mc = std::min<uint64_t>(mc, c.max_m_chunk);
    if (mc == 0) bad(c, "x rows and accumulators do not fit in L1");
    p.m_chunk = static_cast<uint32_t>(mc);
    if (p.convert_x) p.stage_rows = std::min(p.stage_rows, p.m_chunk);
    p.l1_bytes =
        static_cast<uint32_t>(used + aligned(mc * xrow) + kAccBuffers * aligned(mc * tn * 4) +
                              (p.convert_x ? 0 : mc * norm_row));
    if (c.w_before_acquire && (c.row_groups > 1 || p.m_chunk < c.m))
        bad(c, "W before ACQUIRE needs one chunk of x's rows and no row groups");
    if (c.recv_x && (c.row_groups > 1 || p.m_chunk < c.m || c.accumulate ||
                     c.x_dtype != JAL_DT_F32 || (p.convert_x && p.stage_rows < c.m)))
        bad(c, "receiving x needs F32 rows in one chunk (and one staging block), no row "
               "groups and no accumulation");
    if (c.send_y && (c.row_groups > 1 || p.m_chunk < c.m))
        bad(c, "sending y needs its rows in one chunk and no row groups");
    if (!c.store_y && !c.send_y) bad(c, "y neither stored nor sent");
    if ((c.x_senders || c.forward_x) && !c.recv_x) bad(c, "x senders without receiving x");
    return p;
}

namespace {

// The generator: plan_gemm's layout, W tiles streamed through kWBuffers buffers against
// the resident x rows (staged and converted when x is F32 in memory).
class GemmKernel {
public:
    explicit GemmKernel(const GemmConfig& c);
    CodeObject build();

private:
    CodeObject build_grouped();
    void group_rows();
    void group_tile(X i, const std::function<void(X j)>& body);
    X chunk_rows(uint32_t mr);
    void guarded(uint32_t r0, const std::function<void()>& body);
    void declare();
    void share_columns();
    void layout();
    void load_w(X i, int buf, uint32_t m0, uint32_t mr, bool with_y = true);
    void load_y(X i, int buf, uint32_t m0, uint32_t mr);
    void leading_w_loads();
    void receive_x();
    X y_tile_address(X i, uint32_t m0);
    void compute(X i, int buf, int acc, uint32_t m0, uint32_t mr);
    void stage(uint32_t m0, uint32_t mr, uint32_t j);
    void issue_x(uint32_t m0, uint32_t mr);
    void finish_x(uint32_t m0, uint32_t mr);
    void norm_rows(T rows_tile, X rows);

    const GemmConfig& c;
    const GemmPlan p;
    const uint64_t wrow, xrow;
    const jal_cvt_mode mode;
    const uint32_t tn;
    Builder b;
    X x{}, x_stride{}, norm_w{}, w_shards{}, w_stride{}, bias{}, y{}, y_stride{};
    SliceShare share{};
    Label done{};
    X w{};  // this slice's first row of W: read from the shard table once x is on its way
    // w_kmajor without row groups: bytes from one K-row of the shard to the next
    // (count·w_stride; with row groups load_w works it out per tile)
    X w_kstride{};
    X count{}, tiles{}, tn_reg{}, w_step{}, bias_step{}, k_reg{};
    uint32_t l1_w[kWBuffers] = {}, l1_b[kWBuffers] = {}, l1_s[2] = {}, l1_x = 0;
    uint32_t l1_acc[kAccBuffers] = {};
    T tw[kWBuffers] = {}, tb[kWBuffers] = {}, tacc[kAccBuffers] = {}, tx{}, tsub{}, ts[2] = {};
    Q qw[kWBuffers] = {}, qx{}, qst{}, qs[2] = {};
    uint32_t l1_nw = 0, l1_sq = 0, l1_sc = 0;  // the fused norm's weight and scratch
    T tnw{}, tsq{}, tsc{};
    Q qn{};
    uint32_t l1_y[kWBuffers] = {};  // accumulating: the tiles of y added to
    T ty[kWBuffers] = {};
    // Row groups only: the group's rows, the rows of the current chunk (runtime values), the
    // first shard of the slice's column group, the dispatch's slice count, y and the bias
    // from the group's first row and column 0.
    const bool grouped;
    X group_m{}, chunk_m{}, first_shard{}, n_slices{}, y_base{}, bias_base{};
    X shard_rows{}, tiles_per_shard{}, group_tiles{};
    X table_row{};  // slice_tables: s·n, this slice's first entry of w_shards
};

GemmKernel::GemmKernel(const GemmConfig& config)
    : c(config), p(plan_gemm(config)), wrow(numerics::row_bytes(config.weight, config.k)),
      xrow(numerics::row_bytes(p.activation, config.k)), mode(activation_cvt_mode(config.numerics)),
      tn(p.tile_n), b(gemm_name(config)), grouped(config.row_groups > 1)
{}

// Rows of the current chunk of x: a constant, or with row groups the runtime count.
X GemmKernel::chunk_rows(uint32_t mr)
{
    if (!grouped) return emit_const(b, mr);
    X r = b.x();
    b.addi(r, chunk_m, 0);
    return r;
}

// body() only when the chunk has row r0 (with row groups a chunk may be short of its
// static size; row 0 it always has).
void GemmKernel::guarded(uint32_t r0, const std::function<void()>& body)
{
    if (!grouped || r0 == 0) {
        body();
        return;
    }
    Label skip = b.label();
    X t = emit_const(b, r0);
    b.bge(t, chunk_m, skip);
    b.free(t);
    body();
    b.bind(skip);
}

void GemmKernel::declare()
{
    x = b.arg("x", JAL_ARG_ADDRESS);
    x_stride = b.arg("x_stride");
    if (c.rms_norm) norm_w = b.arg("norm_weight", JAL_ARG_ADDRESS);
    w_shards = b.arg("w_shards", JAL_ARG_ADDRESS);
    w_stride = b.arg("w_stride");
    if (c.bias) bias = b.arg("bias", JAL_ARG_ADDRESS);
    y = b.arg("y", JAL_ARG_ADDRESS);
    y_stride = b.arg("y_stride");
}

// This slice's columns of y (rows of W): a slice without any skips to `done`.
void GemmKernel::share_columns()
{
    share = emit_slice_range(b, c.n);
    // A slice without columns would leave its senders' messages queued, or its receivers
    // waiting for its own.
    if (c.recv_x || c.send_y) {
        Label has = b.label();
        b.bne(share.count, zero, has);
        b.trap(JAL_STATUS_INVALID_FIELD);
        b.bind(has);
    }
    if (c.recv_x) b.after_messages_hint(c.x_senders);
    done = emit_skip_if_empty(b, share.count);
    if (c.send_y) {  // its receivers take one message a sender: one tile of columns
        Label one_tile = b.label();
        X t = emit_const(b, tn);
        b.bge(t, share.count, one_tile);
        b.trap(JAL_STATUS_INVALID_FIELD);
        b.bind(one_tile);
        b.free(t);
    }
    {  // this slice's columns of y and entries of the bias
        X off = b.x();
        b.muli(off, share.begin, 4);
        b.add(y, y, off);
        if (c.bias) b.add(bias, bias, off);
        b.free(off);
    }
    b.free(share.begin);
    count = share.count;
    tiles = b.x();  // ceil(count / tn)
    tn_reg = emit_const(b, tn);
    emit_ceil_div(b, tiles, count, tn_reg, tn);
    w_step = b.x();  // bytes from one W tile to the next
    b.muli(w_step, w_stride, static_cast<int32_t>(tn));
    bias_step = emit_const(b, int64_t{tn} * 4);  // also the bias tiles' row stride
    if (c.w_kmajor) {
        w_kstride = b.x();
        b.mul(w_kstride, count, w_stride);
    }
}

void GemmKernel::layout()
{
    for (int i = 0; i < kWBuffers; i++) {
        l1_w[i] = b.l1_alloc(static_cast<uint32_t>(tn * wrow));
        if (c.bias) l1_b[i] = b.l1_alloc(tn * 4);
    }
    if (p.convert_x) {
        l1_s[0] = b.l1_alloc(p.stage_rows * c.k * 4);
        l1_s[1] = b.l1_alloc(p.stage_rows * c.k * 4);
    }
    l1_x = b.l1_alloc(static_cast<uint32_t>(p.m_chunk * xrow));
    for (uint32_t& a : l1_acc) a = b.l1_alloc(p.m_chunk * tn * 4);

    for (T& t : tacc) t = b.t();
    tx = b.t(), tsub = b.t();
    qx = b.q(), qst = b.q();
    for (int i = 0; i < kWBuffers; i++) {
        tw[i] = b.t();
        qw[i] = b.q();
        if (c.bias) tb[i] = b.t();
    }
    k_reg = emit_const(b, c.k);
    if (p.convert_x) ts[0] = b.t(), ts[1] = b.t(), qs[0] = b.q(), qs[1] = b.q();
    if (c.accumulate)
        for (int i = 0; i < kWBuffers; i++) {
            l1_y[i] = b.l1_alloc(p.m_chunk * tn * 4);
            ty[i] = b.t();
        }
    if (c.rms_norm) {
        const uint32_t rows = p.convert_x ? p.stage_rows : p.m_chunk;
        l1_nw = b.l1_alloc(c.k * 4);
        l1_sq = b.l1_alloc(rows * c.k * 4);
        l1_sc = b.l1_alloc(rows * 4);
        tnw = b.t(), tsq = b.t(), tsc = b.t(), qn = b.q();
        X one = emit_const(b, 1), stride = emit_const(b, int64_t{c.k} * 4);
        emit_tdesc_at(b, tnw, l1_nw, one, k_reg, JAL_DT_F32);
        b.tload(tnw, norm_w, stride, qn);  // waited for before the first norm
        b.free(stride);
        b.free(one);
        b.free(norm_w);
    }
}

// The fused RMS norm of `rows` F32 rows in rows_tile (in place); the caller has waited for
// the norm weight's load.
void GemmKernel::norm_rows(T rows_tile, X rows)
{
    X one = emit_const(b, 1);
    emit_tdesc_at(b, tsq, l1_sq, rows, k_reg, JAL_DT_F32);
    emit_tdesc_at(b, tsc, l1_sc, rows, one, JAL_DT_F32);
    b.free(one);
    emit_rms_norm_rows(b, rows_tile, tsq, tsc, tnw, c.k, c.norm_eps);
}

// Where tile i's block of y starts (rows from m0), in a new register.
X GemmKernel::y_tile_address(X i, uint32_t m0)
{
    X a = b.x();
    b.mul(a, i, bias_step);  // i·tn·4: tile i's first column of y
    b.add(a, a, y);
    if (m0 != 0) {
        X r = b.x();
        b.muli(r, y_stride, static_cast<int32_t>(m0));
        b.add(a, a, r);
        b.free(r);
    }
    return a;
}

// Issues the loads of W tile i (and its bias, and accumulating and with_y, its block of y)
// into buffer `buf`.
void GemmKernel::load_w(X i, int buf, uint32_t m0, uint32_t mr, bool with_y)
{
    X rows = emit_block_size(b, i, count, tn_reg);
    X a = b.x();
    b.mul(a, i, w_step);
    b.add(a, a, w);
    if (c.w_kmajor) {  // K rows of the tile's columns, a K-row of the shard count elements
        emit_tdesc_at(b, tw[buf], l1_w[buf], k_reg, rows, c.weight);
        // Row groups: each tile's shard has its own count (group_tile), so per tile.
        X ks = grouped ? b.x() : w_kstride;
        if (grouped) b.mul(ks, count, w_stride);
        b.tload(tw[buf], a, ks, qw[buf], true);
        if (grouped) b.free(ks);
    } else {
        emit_tdesc_at(b, tw[buf], l1_w[buf], rows, k_reg, c.weight);
        b.tload(tw[buf], a, w_stride, qw[buf], true);
    }
    if (c.bias) {
        X one = emit_const(b, 1);
        emit_tdesc_at(b, tb[buf], l1_b[buf], one, rows, JAL_DT_F32);
        b.free(one);
        b.mul(a, i, bias_step);
        b.add(a, a, bias);
        b.tload(tb[buf], a, bias_step, qw[buf]);
    }
    b.free(a);
    b.free(rows);
    if (with_y) load_y(i, buf, m0, mr);
}

// Accumulating: tile i's block of y into buffer `buf`'s y tile.
void GemmKernel::load_y(X i, int buf, uint32_t m0, uint32_t mr)
{
    if (!c.accumulate) return;
    X rows = emit_block_size(b, i, count, tn_reg);
    X mr_reg = chunk_rows(mr);
    emit_tdesc_at(b, ty[buf], l1_y[buf], mr_reg, rows, JAL_DT_F32);
    b.free(mr_reg);
    X ya = y_tile_address(i, m0);
    b.tload(ty[buf], ya, y_stride, qw[buf]);
    b.free(ya);
    b.free(rows);
}

// w_before_acquire: the shard table's entry and the leading W tiles (those the loop would
// load before its first MMA) before ACQUIRE; after it x, then the leading blocks of y.
void GemmKernel::leading_w_loads()
{
    w = emit_table_entry(b, w_shards, share.slice);
    b.free(w_shards);
    b.free(share.slice);
    X j = b.x();
    Label past = b.label();
    for (int t = 0; t < kWBuffers - 1; t++) {
        b.li(j, t);
        b.bge(j, tiles, past);
        load_w(j, t, 0, c.m, false);
    }
    b.bind(past);
    if (c.recv_x) {
        receive_x();
        b.free(j);
        return;
    }
    b.acquire();
    issue_x(0, c.m);
    Label past_y = b.label();
    for (int t = 0; t < kWBuffers - 1 && c.accumulate; t++) {
        b.li(j, t);
        b.bge(j, tiles, past_y);
        load_y(j, t, 0, c.m);
    }
    b.bind(past_y);
    b.free(j);
}

// recv_x: sender r's columns of x's rows (its slice_range of K) into the F32 rows where
// the load would have put them (the staging block when x is converted), each waited for
// (the tile register is described again for the next); then one signal on that load's
// semaphore, so finish_x goes on as after a load.
void GemmKernel::receive_x()
{
    const uint32_t l1 = p.convert_x ? l1_s[0] : l1_x;
    const T t = p.convert_x ? ts[0] : tx;
    X rows = emit_const(b, c.m);
    if (c.x_senders) {
        X senders = b.arg("x_senders");
        emit_receive_shares_from(b, t, l1, rows, c.k, c.k * 4, qst, senders);
        b.free(senders);
    } else {
        emit_receive_shares(b, t, l1, rows, c.k, c.k * 4, qst);
    }
    emit_tdesc_at(b, t, l1, rows, k_reg, JAL_DT_F32);  // the whole rows, as loaded
    if (c.forward_x) {
        X me = b.slice_index();
        b.send(t, me, qst);
        b.free(me);
    }
    b.free(rows);
    b.signal(p.convert_x ? qs[0] : qx, 1);
}

// Multiplies the resident x rows by W tile i (W buffer `buf`, accumulator `acc`) and
// stores the result.
void GemmKernel::compute(X i, int buf, int acc, uint32_t m0, uint32_t mr)
{
    b.wait(qw[buf], 1 + (c.bias ? 1 : 0) + (c.accumulate ? 1 : 0));
    X rows = emit_block_size(b, i, count, tn_reg);
    X mr_reg = chunk_rows(mr);
    emit_tdesc_at(b, tacc[acc], l1_acc[acc], mr_reg, rows, JAL_DT_F32);
    // The bias goes in before the MMA, not after: the vector work then overlaps the
    // previous tile's MMA instead of standing between this MMA and its store.
    b.vfill(tacc[acc], 0.0f);
    if (c.bias) b.vadd(tacc[acc], tacc[acc], tb[buf]);
    b.mma(tacc[acc], tx, tw[buf], c.w_kmajor);
    if (c.accumulate) b.vadd(tacc[acc], ty[buf], tacc[acc]);  // y + (x·Wᵀ + bias)
    X a = y_tile_address(i, m0);
    if (c.store_y) b.tstore(tacc[acc], a, y_stride, qst);
    b.free(a);
    // One tile a slice (share_columns traps otherwise): the slice's columns of every row.
    for (uint32_t copy = 0; copy < c.send_y; copy++)
        emit_send_to_every_dispatch_slice(b, tacc[acc], qst);
    b.free(mr_reg);
    b.free(rows);
}

// Loads the F32 rows of x block j (of stage_rows rows from m0) into ts[j % 2].
void GemmKernel::stage(uint32_t m0, uint32_t mr, uint32_t j)
{
    const uint32_t rs = p.stage_rows;
    uint32_t r0 = j * rs, nr = std::min(rs, mr - r0);
    X rows = emit_const(b, nr), a = b.x();
    if (grouped) {  // min(rs, chunk_m − r0): this block's rows of the group's chunk
        b.li(a, r0);
        b.sub(a, chunk_m, a);
        b.min(rows, rows, a);
    }
    emit_tdesc_at(b, ts[j % 2], l1_s[j % 2], rows, k_reg, JAL_DT_F32);
    b.muli(a, x_stride, static_cast<int32_t>(m0 + r0));
    b.add(a, a, x);
    b.tload(ts[j % 2], a, x_stride, qs[j % 2]);
    b.free(a);
    b.free(rows);
}

// Brings x rows [m0, m0+mr) into L1 in the activation format (tile tx) in two halves:
// issue_x starts the first load; finish_x (after the first W tile's load is issued, so
// both latencies overlap) waits, converts and loads the rest.
void GemmKernel::issue_x(uint32_t m0, uint32_t mr)
{
    if (p.convert_x) {
        stage(m0, mr, 0);
        return;
    }
    X rows = chunk_rows(mr), a = b.x();
    emit_tdesc_at(b, tx, l1_x, rows, k_reg, p.activation);
    b.muli(a, x_stride, static_cast<int32_t>(m0));
    b.add(a, a, x);
    b.tload(tx, a, x_stride, qx);
    b.free(a);
    b.free(rows);
}

void GemmKernel::finish_x(uint32_t m0, uint32_t mr)
{
    if (!p.convert_x) {
        b.wait(qx, 1);
        if (c.rms_norm) {
            if (m0 == 0) b.wait(qn, 1);
            X rows = chunk_rows(mr);
            norm_rows(tx, rows);
            b.free(rows);
        }
        return;
    }
    // Blocks of stage_rows F32 rows through two buffers, each converted into its rows
    // of tx while the next one loads.
    const uint32_t rs = p.stage_rows;
    const uint32_t blocks = static_cast<uint32_t>(ceil_div(mr, rs));
    for (uint32_t j = 0; j < blocks; j++) {
        if (j + 1 < blocks) guarded((j + 1) * rs, [&] { stage(m0, mr, j + 1); });
        const uint32_t r0 = j * rs, nr = std::min(rs, mr - r0);
        guarded(r0, [&] {
            b.wait(qs[j % 2], 1);
            if (c.rms_norm && m0 == 0 && j == 0) b.wait(qn, 1);
            X rows = emit_const(b, nr);
            if (grouped) {  // min(nr, chunk_m − r0)
                X t = emit_const(b, r0);
                b.sub(t, chunk_m, t);
                b.min(rows, rows, t);
                b.free(t);
            }
            if (c.rms_norm) norm_rows(ts[j % 2], rows);
            emit_tdesc_at(b, tsub, static_cast<uint32_t>(l1_x + r0 * xrow), rows, k_reg,
                          p.activation);
            b.free(rows);
            b.vcvt(tsub, ts[j % 2], mode);
        });
    }
    X rows = chunk_rows(mr);
    emit_tdesc_at(b, tx, l1_x, rows, k_reg, p.activation);
    b.free(rows);
}

CodeObject GemmKernel::build()
{
    if (grouped) return build_grouped();
    declare();
    b.slice_table_hint("w_shards");  // read at entry SR_SLICE before the first W tile
    share_columns();
    layout();
    if (c.w_before_acquire || c.recv_x) {
        leading_w_loads();
    } else {
        // Only the arguments (and the norm weight) come before ACQUIRE: in a staged program
        // they load while the stage before finishes. (Loading the first W tile there too
        // does not pay where the slice took part in the stage before: the slice that
        // finishes it last is the one that waits, and its x load would queue behind the
        // tile; docs/performance.md.) The first x load goes out before the shard table is
        // read, so that read's latency overlaps the load's.
        b.acquire();
        issue_x(0, std::min(p.m_chunk, c.m));
        w = emit_table_entry(b, w_shards, share.slice);
        b.free(w_shards);
        b.free(share.slice);
    }
    for (uint32_t m0 = 0; m0 < c.m; m0 += p.m_chunk) {
        const uint32_t mr = std::min(p.m_chunk, c.m - m0);
        if (m0 != 0) issue_x(m0, mr);
        // W tiles through three buffers, loads two tiles ahead of the MMA (so a tile's
        // store queued on the DMA engine never holds up the load the next MMA needs), and
        // three accumulators (so clearing one never waits for the store still reading it).
        // Unrolled by 6 so every register is fixed per copy.
        emit_multi_buffered(
            b, tiles, 6, kWBuffers - 1, [&](X i, int slot) { load_w(i, slot % kWBuffers, m0, mr); },
            [&](X i, int slot) { compute(i, slot % kWBuffers, slot % kAccBuffers, m0, mr); },
            [&] {
                // The first W tile is in flight: the next stage's argument reads go here.
                if (m0 == 0) b.readahead_slot();
                finish_x(m0, mr);
            },
            c.w_before_acquire || c.recv_x);
    }
    return emit_finish(b, done);
}

// Row groups: this slice's group i = s mod a takes rows [i·⌈M/a⌉, …) of x and y; the
// slice's first shard (s − i) and the slice count stay for the column loop.
void GemmKernel::group_rows()
{
    const uint32_t a = c.row_groups;
    const uint64_t gm = ceil_div(c.m, a);
    X s = b.slice_index(), t = emit_const(b, a), i = b.x();
    n_slices = b.slice_count();
    // a must divide the slice count: a column group is a whole number of shards
    emit_trap_unless_multiple(b, n_slices, t);
    if (c.slice_tables) {
        table_row = b.x();
        b.mul(table_row, s, n_slices);
    }
    b.remu(i, s, t);
    b.sub(s, s, i);
    first_shard = s;
    X row0 = b.x();
    b.muli(row0, i, static_cast<int32_t>(gm));
    b.li(t, c.m);
    b.min(row0, row0, t);
    group_m = b.x();
    b.sub(group_m, t, row0);
    b.li(t, static_cast<int64_t>(gm));
    b.min(group_m, group_m, t);
    b.free(i);
    b.free(t);
    done = emit_skip_if_empty(b, group_m);
    X off = b.x();  // x and y from the group's first row
    b.mul(off, row0, y_stride);
    b.add(y, y, off);
    b.mul(off, row0, x_stride);
    b.add(x, x, off);
    b.free(off);
    b.free(row0);
    y_base = y, bias_base = bias;
}

// Tile i of the column group's tiles (tiles_per_shard a shard, shard after shard): sets
// count, w, y and the bias to its shard's, then body(its tile index in the shard). A tile
// past its shard's rows (the last shards may be short or empty) is skipped.
void GemmKernel::group_tile(X i, const std::function<void(X j)>& body)
{
    X sh = b.x(), j = b.x(), begin = b.x();
    Label skip = b.label();
    b.divu(sh, i, tiles_per_shard);
    b.mul(j, sh, tiles_per_shard);
    b.sub(j, i, j);
    b.add(sh, sh, first_shard);
    count = b.x();  // slice_range(N, n, sh), as the one-group split gives shard sh
    b.li(count, c.n);
    b.mul(begin, sh, shard_rows);
    b.min(begin, begin, count);
    b.sub(count, count, begin);
    b.min(count, count, shard_rows);
    w = b.x();
    b.mul(w, j, tn_reg);
    b.bge(w, count, skip);
    b.free(w);
    if (c.slice_tables) b.add(sh, sh, table_row);
    w = emit_table_entry(b, w_shards, sh);
    b.free(sh);
    b.muli(begin, begin, 4);
    y = b.x();
    b.add(y, y_base, begin);
    if (c.bias) {
        bias = b.x();
        b.add(bias, bias_base, begin);
    }
    b.free(begin);
    body(j);
    if (c.bias) b.free(bias);
    b.free(y);
    b.bind(skip);
    b.free(w);
    b.free(count);
    b.free(j);
}

// Row groups: per chunk of the group's rows, x once, then every shard of the column group
// streams against it.
CodeObject GemmKernel::build_grouped()
{
    declare();
    group_rows();
    tn_reg = emit_const(b, tn);
    w_step = b.x();
    b.muli(w_step, w_stride, static_cast<int32_t>(tn));
    bias_step = emit_const(b, int64_t{tn} * 4);
    {  // shard rows ⌈N/n⌉, tiles a shard ⌈that/tn⌉, tiles of the column group a·that
        X t = emit_const(b, c.n);
        shard_rows = b.x();
        b.add(shard_rows, t, n_slices);
        b.addi(shard_rows, shard_rows, -1);
        b.divu(shard_rows, shard_rows, n_slices);
        b.free(t);
        tiles_per_shard = b.x();
        emit_ceil_div(b, tiles_per_shard, shard_rows, tn_reg, tn);
        group_tiles = b.x();
        b.muli(group_tiles, tiles_per_shard, static_cast<int32_t>(c.row_groups));
    }
    layout();
    chunk_m = b.x();
    const uint32_t gm = static_cast<uint32_t>(ceil_div(c.m, c.row_groups));
    for (uint32_t m0 = 0; m0 < gm; m0 += p.m_chunk) {
        const uint32_t mr = std::min(p.m_chunk, gm - m0);
        Label past = b.label();
        b.li(chunk_m, m0);
        b.sub(chunk_m, group_m, chunk_m);  // rows of the group from m0 (signed)
        b.bge(zero, chunk_m, past);
        {
            X t = emit_const(b, p.m_chunk);
            b.min(chunk_m, chunk_m, t);
            b.free(t);
        }
        issue_x(m0, mr);
        finish_x(m0, mr);
        // Every tile of the column group's shards in one stream, so the loads run ahead
        // across shards without a pause at each shard's start.
        emit_multi_buffered(
            b, group_tiles, 6, kWBuffers - 1,
            [&](X i, int slot) {
                group_tile(i, [&](X j) { load_w(j, slot % kWBuffers, m0, mr); });
            },
            [&](X i, int slot) {
                group_tile(i,
                           [&](X j) { compute(j, slot % kWBuffers, slot % kAccBuffers, m0, mr); });
            });
        b.bind(past);
    }
    return emit_finish(b, done);
}

}  // namespace

CodeObject build_gemm(const GemmConfig& c)
{
    return GemmKernel(c).build();
}

void k_major_shard(const void* rows, uint32_t n_rows, uint32_t k, jal_dtype dtype, void* out)
{
    if (dtype != JAL_DT_F32 && dtype != JAL_DT_BF16 && dtype != JAL_DT_F16)
        throw Error(JAL_STATUS_INVALID_FIELD, "k_major_shard: F32, BF16 or F16 only");
    const size_t es = dtype == JAL_DT_F32 ? 4 : 2;
    const auto* src = static_cast<const unsigned char*>(rows);
    auto* dst = static_cast<unsigned char*>(out);
    constexpr uint32_t kBlock = 32;  // blocks of 32 x 32 elements: both sides stay in cache
    for (uint32_t n0 = 0; n0 < n_rows; n0 += kBlock)
        for (uint32_t j0 = 0; j0 < k; j0 += kBlock)
            for (uint32_t n = n0; n < std::min(n_rows, n0 + kBlock); n++)
                for (uint32_t j = j0; j < std::min(k, j0 + kBlock); j++)
                    std::memcpy(dst + (size_t{j} * n_rows + n) * es, src + (size_t{n} * k + j) * es,
                                es);
}

}  // namespace jal::kernels::linear
