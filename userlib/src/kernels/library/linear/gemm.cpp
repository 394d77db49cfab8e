// GEMV and GEMM (gemm.hpp): the generator. Each slice computes the columns of y that its
// rows of W give, streaming W through two tile buffers so HBM and the matrix engine overlap.
#include <jal/kernels/library/gemm.hpp>

#include <algorithm>

#include <jal/error.hpp>
#include <jal/isa/numerics.hpp>

#include "emit.hpp"

namespace jal::kernels::linear {

using namespace detail;

namespace {

constexpr uint32_t kL1 = JAL_SLICE_L1_BYTES;
constexpr uint32_t kAlign = 64;
constexpr int kWBuffers = 3;                   // W loads run two tiles ahead of the MMA
constexpr int kAccBuffers = 3;                 // a tile's store may still be reading one
constexpr uint32_t kWeightBudget = 3u << 19;   // all W buffers together, at most (1.5 MiB)
constexpr uint32_t kStageBudget = 768u << 10;  // both F32 staging buffers of x, at most

uint32_t aligned(uint64_t bytes)
{
    return static_cast<uint32_t>(ceil_div(bytes, kAlign) * kAlign);
}

[[noreturn]] void bad(const GemmConfig& c, const std::string& why)
{
    throw Error(JAL_STATUS_INVALID_FIELD, gemm_name(c) + ": " + why);
}

bool weight_format_ok(jal_dtype d)
{
    return d == JAL_DT_MXFP4 || d == JAL_DT_MXFP8_E4M3 || d == JAL_DT_BF16 || d == JAL_DT_F32;
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
    case JAL_DT_F32:
        w = "f32";
        break;
    default:
        break;
    }
    // At most 63 characters (the code object's name field).
    std::string name = "gemm_" + std::string(w) + "_" + numerics_name(c.numerics) + "_m" +
                       std::to_string(c.m) + "n" + std::to_string(c.n) + "k" + std::to_string(c.k);
    if (c.bias) name += "_bias";
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
    if (!weight_format_ok(c.weight)) bad(c, "weights must be MXFP4, MXFP8_E4M3, BF16 or F32");
    GemmPlan p;
    p.activation = activation_dtype(c.weight, c.numerics);
    if (c.x_dtype != JAL_DT_F32 && c.x_dtype != p.activation)
        bad(c, "x must be F32 or already in the activation format");
    p.convert_x = c.x_dtype != p.activation;
    uint64_t wrow = numerics::row_bytes(c.weight, c.k);
    uint64_t xrow = numerics::row_bytes(p.activation, c.k);
    if (wrow == 0 || xrow == 0) bad(c, "K must be a multiple of 32 for block formats");

    // W rows per tile: a GEMV wants big DMA transfers; a GEMM keeps the accumulator small.
    uint64_t tn = c.tile_n;
    if (tn == 0) {
        tn = kWeightBudget / kWBuffers / wrow;
        tn = std::min<uint64_t>(tn, c.m <= 16 ? 1024 : 128);
        if (tn >= 16) tn -= tn % 16;
    }
    tn = std::max<uint64_t>(1, std::min<uint64_t>(tn, c.n));
    if (kWBuffers * tn * wrow > kL1 / 2)
        bad(c, "a tile of W rows does not fit in L1 (K too large)");
    p.tile_n = static_cast<uint32_t>(tn);

    uint64_t used = kWBuffers * (aligned(tn * wrow) + (c.bias ? aligned(tn * 4) : 0));
    if (p.convert_x) {
        uint64_t rs = std::max<uint64_t>(1, kStageBudget / 2 / (uint64_t{c.k} * 4));
        p.stage_rows = static_cast<uint32_t>(std::min<uint64_t>(rs, c.m));
        used += 2 * aligned(uint64_t{p.stage_rows} * c.k * 4);
    }
    // x rows resident at once: what is left after W, staging and the two accumulators.
    uint64_t left = kL1 > used + 4 * kAlign ? kL1 - used - 4 * kAlign : 0;
    uint64_t mc = std::min<uint64_t>(c.m, left / (xrow + kAccBuffers * tn * 4));
    if (c.max_m_chunk) mc = std::min<uint64_t>(mc, c.max_m_chunk);
    if (mc == 0) bad(c, "x rows and accumulators do not fit in L1");
    p.m_chunk = static_cast<uint32_t>(mc);
    if (p.convert_x) p.stage_rows = std::min(p.stage_rows, p.m_chunk);
    p.l1_bytes =
        static_cast<uint32_t>(used + aligned(mc * xrow) + kAccBuffers * aligned(mc * tn * 4));
    return p;
}

CodeObject build_gemm(const GemmConfig& c)
{
    const GemmPlan p = plan_gemm(c);
    const uint64_t wrow = numerics::row_bytes(c.weight, c.k);
    const uint64_t xrow = numerics::row_bytes(p.activation, c.k);
    const jal_cvt_mode mode = activation_cvt_mode(c.numerics);
    const uint32_t tn = p.tile_n;

    Builder b(gemm_name(c));
    X x = b.arg("x", JAL_ARG_ADDRESS);
    X x_stride = b.arg("x_stride");
    X w_shards = b.arg("w_shards", JAL_ARG_ADDRESS);
    X w_stride = b.arg("w_stride");
    X bias{};
    if (c.bias) bias = b.arg("bias", JAL_ARG_ADDRESS);
    X y = b.arg("y", JAL_ARG_ADDRESS);
    X y_stride = b.arg("y_stride");

    SliceShare share = emit_slice_range(b, c.n);
    Label done = b.label();
    b.beq(share.count, zero, done);
    X w{};  // this slice's first row of W: read from the shard table once x is on its way
    {       // this slice's columns of y and entries of the bias
        X off = b.x();
        b.muli(off, share.begin, 4);
        b.add(y, y, off);
        if (c.bias) b.add(bias, bias, off);
        b.free(off);
    }
    b.free(share.begin);
    X count = share.count;
    X tiles = b.x();  // ceil(count / tn)
    X tn_reg = emit_const(b, tn);
    b.addi(tiles, count, static_cast<int32_t>(tn - 1));
    b.divu(tiles, tiles, tn_reg);
    X w_step = b.x();  // bytes from one W tile to the next
    b.muli(w_step, w_stride, static_cast<int32_t>(tn));
    X bias_step = emit_const(b, int64_t{tn} * 4);  // also the bias tiles' row stride
    X stores = emit_const(b, 0);

    // L1 layout.
    uint32_t l1_w[kWBuffers], l1_b[kWBuffers] = {};
    for (int i = 0; i < kWBuffers; i++) {
        l1_w[i] = b.l1_alloc(static_cast<uint32_t>(tn * wrow));
        if (c.bias) l1_b[i] = b.l1_alloc(tn * 4);
    }
    uint32_t l1_s[2] = {0, 0};
    if (p.convert_x) {
        l1_s[0] = b.l1_alloc(p.stage_rows * c.k * 4);
        l1_s[1] = b.l1_alloc(p.stage_rows * c.k * 4);
    }
    const uint32_t l1_x = b.l1_alloc(static_cast<uint32_t>(p.m_chunk * xrow));
    uint32_t l1_acc[kAccBuffers];
    for (uint32_t& a : l1_acc) a = b.l1_alloc(p.m_chunk * tn * 4);

    T tw[kWBuffers], tb[kWBuffers] = {}, tacc[kAccBuffers] = {b.t(), b.t(), b.t()}, tx = b.t(),
                     tsub = b.t();
    Q qw[kWBuffers], qx = b.q(), qst = b.q();
    for (int i = 0; i < kWBuffers; i++) {
        tw[i] = b.t();
        qw[i] = b.q();
        if (c.bias) tb[i] = b.t();
    }
    const X k_reg = emit_const(b, c.k);

    // Describes tile `t` at L1 offset `l1` with `rows` (register) rows of `cols` elements.
    auto desc = [&](T t, uint32_t l1, X rows, X cols, jal_dtype dt) {
        X a = emit_const(b, l1);
        b.tdesc(t, a, rows, cols, dt);
        b.free(a);
    };
    // rows of W tile i: min(tn, count - i·tn), into a new register.
    auto tile_rows = [&](X i) {
        X r = b.x();
        b.mul(r, i, tn_reg);
        b.sub(r, count, r);
        b.min(r, r, tn_reg);
        return r;
    };
    // Issues the loads of W tile i (and its bias) into buffer `buf`.
    auto load_w = [&](X i, int buf) {
        X rows = tile_rows(i);
        desc(tw[buf], l1_w[buf], rows, k_reg, c.weight);
        X a = b.x();
        b.mul(a, i, w_step);
        b.add(a, a, w);
        b.tload(tw[buf], a, w_stride, qw[buf]);
        if (c.bias) {
            X one = emit_const(b, 1);
            desc(tb[buf], l1_b[buf], one, rows, JAL_DT_F32);
            b.free(one);
            b.mul(a, i, bias_step);
            b.add(a, a, bias);
            b.tload(tb[buf], a, bias_step, qw[buf]);
        }
        b.free(a);
        b.free(rows);
    };
    // Multiplies the resident x rows by W tile i (W buffer `buf`, accumulator `acc`) and stores the result.
    auto compute = [&](X i, int buf, int acc, uint32_t m0, uint32_t mr) {
        b.wait(qw[buf], c.bias ? 2 : 1);
        X rows = tile_rows(i);
        X mr_reg = emit_const(b, mr);
        desc(tacc[acc], l1_acc[acc], mr_reg, rows, JAL_DT_F32);
        // The bias goes in before the MMA, not after: the vector work then overlaps the
        // previous tile's MMA instead of standing between this MMA and its store.
        b.vfill(tacc[acc], 0.0f);
        if (c.bias) b.vadd(tacc[acc], tacc[acc], tb[buf]);
        b.mma(tacc[acc], tx, tw[buf]);
        X a = b.x();
        b.mul(a, i, bias_step);  // i·tn·4: tile i's first column of y
        b.add(a, a, y);
        if (m0 != 0) {
            X r = b.x();
            b.muli(r, y_stride, static_cast<int32_t>(m0));
            b.add(a, a, r);
            b.free(r);
        }
        b.tstore(tacc[acc], a, y_stride, qst);
        b.addi(stores, stores, 1);
        b.free(a);
        b.free(mr_reg);
        b.free(rows);
    };
    // Brings x rows [m0, m0+mr) into L1 in the activation format (tile tx) in two halves:
    // issue_x starts the first load; finish_x (after the first W tile's load is issued, so
    // both latencies overlap) waits, converts and loads the rest.
    T ts[2] = {};
    Q qs[2] = {};
    if (p.convert_x) ts[0] = b.t(), ts[1] = b.t(), qs[0] = b.q(), qs[1] = b.q();
    const uint32_t rs = p.stage_rows;
    auto stage = [&](uint32_t m0, uint32_t mr, uint32_t j) {  // F32 rows of block j into ts[j % 2]
        uint32_t r0 = j * rs, nr = std::min(rs, mr - r0);
        X rows = emit_const(b, nr), a = b.x();
        desc(ts[j % 2], l1_s[j % 2], rows, k_reg, JAL_DT_F32);
        b.muli(a, x_stride, static_cast<int32_t>(m0 + r0));
        b.add(a, a, x);
        b.tload(ts[j % 2], a, x_stride, qs[j % 2]);
        b.free(a);
        b.free(rows);
    };
    auto issue_x = [&](uint32_t m0, uint32_t mr) {
        if (p.convert_x) {
            stage(m0, mr, 0);
            return;
        }
        X rows = emit_const(b, mr), a = b.x();
        desc(tx, l1_x, rows, k_reg, p.activation);
        b.muli(a, x_stride, static_cast<int32_t>(m0));
        b.add(a, a, x);
        b.tload(tx, a, x_stride, qx);
        b.free(a);
        b.free(rows);
    };
    auto finish_x = [&](uint32_t m0, uint32_t mr) {
        if (!p.convert_x) {
            b.wait(qx, 1);
            return;
        }
        // Blocks of stage_rows F32 rows through two buffers, each converted into its rows
        // of tx while the next one loads.
        const uint32_t blocks = static_cast<uint32_t>(ceil_div(mr, rs));
        for (uint32_t j = 0; j < blocks; j++) {
            if (j + 1 < blocks) stage(m0, mr, j + 1);
            b.wait(qs[j % 2], 1);
            uint32_t r0 = j * rs, nr = std::min(rs, mr - r0);
            X rows = emit_const(b, nr);
            desc(tsub, static_cast<uint32_t>(l1_x + r0 * xrow), rows, k_reg, p.activation);
            b.free(rows);
            b.vcvt(tsub, ts[j % 2], mode);
        }
        X rows = emit_const(b, mr);
        desc(tx, l1_x, rows, k_reg, p.activation);
        b.free(rows);
    };

    // The first x load goes out before the shard table is read, so that read's latency
    // overlaps the load's.
    issue_x(0, std::min(p.m_chunk, c.m));
    w = emit_table_entry(b, w_shards, share.slice);
    b.free(w_shards);
    b.free(share.slice);
    for (uint32_t m0 = 0; m0 < c.m; m0 += p.m_chunk) {
        const uint32_t mr = std::min(p.m_chunk, c.m - m0);
        if (m0 != 0) issue_x(m0, mr);
        // W tiles through three buffers, loads two tiles ahead of the MMA (so a tile's
        // store queued on the DMA engine never holds up the load the next MMA needs), and
        // three accumulators (so clearing one never waits for the store still reading it).
        // Unrolled by 6 so every register is fixed per copy.
        emit_multi_buffered(
            b, tiles, 6, kWBuffers - 1, [&](X i, int slot) { load_w(i, slot % kWBuffers); },
            [&](X i, int slot) { compute(i, slot % kWBuffers, slot % kAccBuffers, m0, mr); },
            [&] { finish_x(m0, mr); });
    }
    emit_wait_n(b, qst, stores);  // every store of y has landed before the slice ends
    b.bind(done);
    b.end();
    return b.finish();
}

}  // namespace jal::kernels::linear
