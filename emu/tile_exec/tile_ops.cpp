// The matrix engine (MMA) and the vector engine (V* ops): operand checks, the arithmetic
// (jal::numerics for MMA, conversions and transcendentals; plain F32 otherwise) and the
// engine op the timing model costs. A result may overlap its inputs: vector ops work on L1
// where it lies when each input is apart from the result or is the result itself, and on
// copies of the inputs otherwise (an MMA copies an input that overlaps its accumulator).
#include "emu/tile_exec/executor.hpp"

#include <jal/isa/numerics.hpp>
#include <jal/isa/tile_math.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <vector>

namespace jal::emu::exec {

namespace {

// std::fmax and std::fmin, inline where the answer is plain (a VREDMAX or VCLAMP called the
// library per element); equal values (-0 against +0) and NaNs go to the library, whose
// answer they keep.
inline float fmax_of(float x, float y)
{
    if (x > y) return x;
    if (x < y) return y;
    return std::fmax(x, y);
}
inline float fmin_of(float x, float y)
{
    if (x < y) return x;
    if (x > y) return y;
    return std::fmin(x, y);
}

constexpr std::uint32_t kOk = JAL_STATUS_OK;
constexpr std::uint32_t kBad = JAL_STATUS_INVALID_FIELD;

const Tile* tile(const SliceState& s, std::uint8_t r)
{
    if (r >= JAL_ISA_TILE_REGS || !s.t[r].valid()) return nullptr;
    return &s.t[r];
}

// The vector ops' copies of their operands, kept per host thread and slot: allocated per
// op they cost a malloc, a zero fill and, for large tiles, glibc's arena trims with their
// page faults (isa/numerics/scratch.hpp). Every use writes what it reads; each is at most
// a tile (an L1) of elements.
enum Slot { kA, kB, kD, kSlots };

template <typename T>
T* room(Slot slot, std::uint64_t n)
{
    thread_local std::array<std::vector<T>, kSlots> bufs;
    std::vector<T>& v = bufs[slot];
    if (v.size() < n) v.resize(n);
    return v.data();
}

// Tile t as F32 elements, row after row, in `slot`.
float* load(const SliceState& s, const Tile& t, Slot slot)
{
    float* v = room<float>(slot, t.elements());
    for (std::uint32_t r = 0; r < t.rows; ++r)
        jal::numerics::dequantize_row(static_cast<jal_dtype>(t.dtype),
                                      s.l1 + t.addr + std::uint64_t{r} * t.stride,
                                      v + std::uint64_t{r} * t.cols, t.cols);
    return v;
}

template <typename T>
void store_raw(SliceState& s, const Tile& t, const T* v)
{
    for (std::uint32_t r = 0; r < t.rows; ++r)
        std::memcpy(s.l1 + t.addr + std::uint64_t{r} * t.stride, v + std::uint64_t{r} * t.cols,
                    std::uint64_t{t.cols} * sizeof(T));
}

float f32_bits(std::uint32_t b)
{
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

// tb's shape relative to the result: same, a row (1 x N), a column (M x 1) or 1 x 1.
bool broadcastable(const Tile& res, const Tile& b)
{
    return (b.rows == res.rows || b.rows == 1) && (b.cols == res.cols || b.cols == 1);
}

// d[k] = f(a[k], b at k's row and column, d[k]) over the result td; b is broadcast from a
// row, a column or one element. rows(r) gives row r's d, a and b (b: its own row, or the
// one row it broadcasts).
struct RowPtrs {
    float* d;
    const float* a;
    const float* b;
};
template <typename F, typename Rows>
void binary(const Tile& td, const Tile& tb, Rows rows, F f)
{
    for (std::uint32_t r = 0; r < td.rows; ++r) {
        const RowPtrs p = rows(r);
        if (tb.cols == 1) {
            const float b0 = p.b[0];  // read before d's row is written (d may be b: 1 x 1)
            for (std::uint32_t c = 0; c < td.cols; ++c) p.d[c] = f(p.a[c], b0, p.d[c]);
        } else {
            for (std::uint32_t c = 0; c < td.cols; ++c) p.d[c] = f(p.a[c], p.b[c], p.d[c]);
        }
    }
}

// The two-input vector ops, the opcode resolved once a tile rather than once an element.
template <typename Rows>
void elementwise(std::uint8_t op, const Tile& td, const Tile& tb, Rows rows)
{
    switch (op) {
    case JAL_OP_VADD:
        binary(td, tb, rows, [](float x, float y, float) { return x + y; });
        break;
    case JAL_OP_VSUB:
        binary(td, tb, rows, [](float x, float y, float) { return x - y; });
        break;
    case JAL_OP_VMUL:
        binary(td, tb, rows, [](float x, float y, float) { return x * y; });
        break;
    case JAL_OP_VMAX:
        binary(td, tb, rows, [](float x, float y, float) { return fmax_of(x, y); });
        break;
    case JAL_OP_VMIN:
        binary(td, tb, rows, [](float x, float y, float) { return fmin_of(x, y); });
        break;
    default:  // VFMA
        binary(td, tb, rows, [](float x, float y, float z) { return std::fma(x, y, z); });
        break;
    }
}

// The one-input vector ops over n elements from x to y (y may be x).
void unary(std::uint8_t op, const float* x, float* y, std::uint64_t n, float k, float lo, float hi)
{
    switch (op) {
    case JAL_OP_VSCALE:
        for (std::uint64_t e = 0; e < n; ++e) y[e] = x[e] * k;
        break;
    case JAL_OP_VADDS:
        for (std::uint64_t e = 0; e < n; ++e) y[e] = x[e] + k;
        break;
    case JAL_OP_VEXP:
        jal::numerics::exp_f32(x, y, n);
        break;
    case JAL_OP_VRSQRT:
        jal::numerics::rsqrt_f32(x, y, n);
        break;
    case JAL_OP_VSILU:
        jal::numerics::silu_f32(x, y, n);
        break;
    case JAL_OP_VSIGMOID:
        jal::numerics::sigmoid_f32(x, y, n);
        break;
    case JAL_OP_VRECIP:
        jal::numerics::recip_f32(x, y, n);
        break;
    case JAL_OP_VNEG:
        for (std::uint64_t e = 0; e < n; ++e) y[e] = -x[e];
        break;
    default:  // VCLAMP
        for (std::uint64_t e = 0; e < n; ++e) y[e] = fmin_of(fmax_of(x[e], lo), hi);
        break;
    }
}

// Where a vector op can work on L1 as it lies, with no copies: F32 rows the host can
// address as floats, and each input either apart from the result or the result itself
// (element i of the input is then read just before element i of the result is written,
// which sequential semantics allow). A partly overlapping input, or a broadcast one over
// the result, is copied out first (load()), as every op did before.
bool f32_rows(const Tile& t)
{
    return t.dtype == JAL_DT_F32 && t.addr % alignof(float) == 0 && t.stride % alignof(float) == 0;
}
bool contiguous(const Tile& t)
{
    return t.rows == 1 || t.stride == std::uint64_t{t.cols} * 4;
}
bool in_place(const Tile& res, const Tile& in)
{
    return !in.span().overlaps(res.span()) ||
           (in.addr == res.addr && in.stride == res.stride && in.same_shape(res));
}
float* row_of(const SliceState& s, const Tile& t, std::uint32_t r)
{
    return reinterpret_cast<float*>(s.l1 + t.addr + std::uint64_t{r} * t.stride);
}

// Slower input format first: F32 < BF16/F16 < MXFP8/Q8_0 < MXFP4.
int speed_rank(std::uint32_t dt)
{
    switch (dt) {
    case JAL_DT_MXFP4:
        return 3;
    case JAL_DT_MXFP8_E4M3:
    case JAL_DT_MXFP8_E5M2:
    case JAL_DT_Q8_0:
        return 2;
    case JAL_DT_BF16:
    case JAL_DT_F16:
        return 1;
    default:
        return 0;
    }
}

bool mma_input(std::uint32_t dt)
{
    return dtype_known(dt) && dt != JAL_DT_I32;
}

jal::numerics::ConstTile const_view(const SliceState& s, const Tile& t)
{
    return {s.l1 + t.addr, t.rows, t.cols, t.stride, static_cast<jal_dtype>(t.dtype)};
}

std::uint32_t mma(SliceState& s, const Insn& i, bool timing_only, EngineOp& op,
                  const HostOperand* b_host)
{
    const Tile *acc = tile(s, i.a), *a = tile(s, i.b), *b = tile(s, i.c);
    const bool kmajor = i.imm == JAL_MMA_B_KMAJOR;  // b holds K rows of N (ISA 1.4)
    if (!acc || !a || !b || i.d || (i.imm && !kmajor)) return kBad;
    if (acc->dtype != JAL_DT_F32 || !mma_input(a->dtype) || !mma_input(b->dtype)) return kBad;
    if (b->dtype == JAL_DT_Q8_0 && a->dtype != JAL_DT_Q8_0) return kBad;
    if (kmajor && b->dtype != JAL_DT_F32 && b->dtype != JAL_DT_BF16 && b->dtype != JAL_DT_F16)
        return kBad;
    const std::uint32_t b_n = kmajor ? b->cols : b->rows, b_k = kmajor ? b->rows : b->cols;
    if (acc->rows != a->rows || acc->cols != b_n || a->cols != b_k) return kBad;
    if (!timing_only) {
        // Sequential semantics: inputs are the values before the MMA, even if the
        // accumulator overlaps them (then they are copied out first).
        std::vector<std::byte> copy_a, copy_b;
        auto input = [&](const Tile& t, std::vector<std::byte>& copy) {
            jal::numerics::ConstTile v = const_view(s, t);
            if (!t.span().overlaps(acc->span())) return v;
            const L1Range r = t.span();
            copy.assign(s.l1 + r.lo, s.l1 + r.hi);
            v.data = copy.data();
            return v;
        };
        const jal::numerics::ConstTile va = input(*a, copy_a);
        const jal::numerics::ConstTile vb =
            b_host ? jal::numerics::ConstTile{b_host->data, b->rows, b->cols, b_host->stride,
                                              static_cast<jal_dtype>(b->dtype)}
                   : input(*b, copy_b);
        const jal::numerics::Tile out{s.l1 + acc->addr, acc->rows, acc->cols, acc->stride,
                                      JAL_DT_F32};
        const jal_status st =
            kmajor ? jal::numerics::mma_kmajor(out, va, vb) : jal::numerics::mma(out, va, vb);
        if (st != JAL_STATUS_OK) return st;
    }
    op.engine = Engine::matrix;
    op.reads = {a->span(), b->span(), acc->span()};
    op.writes = acc->span();
    op.flops = 2ull * acc->rows * acc->cols * a->cols;
    op.mma_dtype = speed_rank(a->dtype) <= speed_rank(b->dtype) ? a->dtype : b->dtype;
    return kOk;
}

}  // namespace

// long-function: one case per tile opcode (the tile half of the interpreter switch).
std::uint32_t execute_tile_op(SliceState& s, const Insn& i, bool timing_only, EngineOp& op,
                              std::uint64_t& addr, const HostOperand* b_host)
{
    (void)addr;
    if (i.op == JAL_OP_MMA) return mma(s, i, timing_only, op, b_host);

    op.engine = Engine::vector;
    const Tile* td = tile(s, i.a);
    if (!td) return kBad;
    const std::uint64_t n = td->elements();
    op.writes = td->span();
    const bool compute = !timing_only;

    switch (i.op) {
    case JAL_OP_VADD:
    case JAL_OP_VSUB:
    case JAL_OP_VMUL:
    case JAL_OP_VMAX:
    case JAL_OP_VMIN:
    case JAL_OP_VFMA: {
        const Tile *ta = tile(s, i.b), *tb = tile(s, i.c);
        if (!ta || !tb || i.d || i.imm) return kBad;
        if (td->dtype != JAL_DT_F32 || ta->dtype != JAL_DT_F32 || tb->dtype != JAL_DT_F32)
            return kBad;
        if (!td->same_shape(*ta) || !broadcastable(*td, *tb)) return kBad;
        op.reads = {ta->span(), tb->span(), i.op == JAL_OP_VFMA ? td->span() : L1Range{}};
        op.elems = n;
        op.flops = i.op == JAL_OP_VFMA ? 2 * n : n;
        if (!compute) return kOk;
        if (f32_rows(*td) && f32_rows(*ta) && f32_rows(*tb) && in_place(*td, *ta) &&
            in_place(*td, *tb)) {
            elementwise(i.op, *td, *tb, [&](std::uint32_t r) {
                return RowPtrs{row_of(s, *td, r), row_of(s, *ta, r),
                               row_of(s, *tb, tb->rows == 1 ? 0 : r)};
            });
            return kOk;
        }
        const float *a = load(s, *ta, kA), *b = load(s, *tb, kB);
        // Only VFMA reads d's elements; the other ops write them without reading.
        float* d = i.op == JAL_OP_VFMA ? load(s, *td, kD) : room<float>(kD, n);
        const std::uint32_t cols = td->cols, bcols = tb->cols;
        elementwise(i.op, *td, *tb, [&](std::uint32_t r) {
            return RowPtrs{d + std::uint64_t{r} * cols, a + std::uint64_t{r} * cols,
                           b + std::uint64_t{tb->rows == 1 ? 0 : r} * bcols};
        });
        store_raw(s, *td, d);
        return kOk;
    }
    case JAL_OP_VSCALE:
    case JAL_OP_VADDS:
    case JAL_OP_VEXP:
    case JAL_OP_VRSQRT:
    case JAL_OP_VSILU:
    case JAL_OP_VSIGMOID:
    case JAL_OP_VRECIP:
    case JAL_OP_VNEG:
    case JAL_OP_VCLAMP: {
        const Tile* ta = tile(s, i.b);
        if (!ta) return kBad;
        const bool imm_op = i.op == JAL_OP_VSCALE || i.op == JAL_OP_VADDS;
        if (i.op == JAL_OP_VCLAMP ? (i.c >= 32 || i.d >= 32 || i.imm)
                                  : (i.c || i.d || (!imm_op && i.imm)))
            return kBad;
        if (td->dtype != JAL_DT_F32 || ta->dtype != JAL_DT_F32 || !td->same_shape(*ta)) return kBad;
        op.reads[0] = ta->span();
        const bool trans = i.op >= JAL_OP_VEXP && i.op <= JAL_OP_VRECIP;
        (trans ? op.trans_elems : op.elems) = n;
        op.flops = i.op == JAL_OP_VCLAMP ? 2 * n : n;
        if (!compute) return kOk;
        const float k = f32_bits(static_cast<std::uint32_t>(i.imm));
        const float lo = i.op == JAL_OP_VCLAMP ? f32_bits(static_cast<std::uint32_t>(s.x[i.c])) : 0,
                    hi = i.op == JAL_OP_VCLAMP ? f32_bits(static_cast<std::uint32_t>(s.x[i.d])) : 0;
        if (f32_rows(*td) && f32_rows(*ta) && in_place(*td, *ta)) {
            // Whole tiles in one call where both are packed: the transcendentals then see
            // the same runs of elements as through the copy.
            if (contiguous(*td) && contiguous(*ta)) {
                unary(i.op, row_of(s, *ta, 0), row_of(s, *td, 0), n, k, lo, hi);
                return kOk;
            }
            if (!trans) {
                for (std::uint32_t r = 0; r < td->rows; ++r)
                    unary(i.op, row_of(s, *ta, r), row_of(s, *td, r), td->cols, k, lo, hi);
                return kOk;
            }
        }
        float* const v = load(s, *ta, kA);
        unary(i.op, v, v, n, k, lo, hi);
        store_raw(s, *td, v);
        return kOk;
    }
    case JAL_OP_VREDSUM:
    case JAL_OP_VREDMAX:
    case JAL_OP_VARGMAX:
    case JAL_OP_VTOPK:
    case JAL_OP_VTOPKV: {
        const Tile* ta = tile(s, i.b);
        if (!ta || i.c || i.d || ta->dtype != JAL_DT_F32 || td->rows != ta->rows) return kBad;
        const bool topk = i.op == JAL_OP_VTOPK || i.op == JAL_OP_VTOPKV;
        const std::uint32_t k = topk ? static_cast<std::uint32_t>(i.imm) : 1;
        if (topk ? (i.imm < 1 || k > ta->cols) : i.imm != 0) return kBad;
        if (td->cols != k) return kBad;
        const bool ints = i.op == JAL_OP_VARGMAX || i.op == JAL_OP_VTOPK;
        if (td->dtype != (ints ? JAL_DT_I32 : JAL_DT_F32)) return kBad;
        op.reads[0] = ta->span();
        (topk ? op.sort_elems : op.elems) = ta->elements();
        op.flops = i.op == JAL_OP_VREDSUM ? ta->elements() : 0;
        if (!compute) return kOk;
        const bool direct = f32_rows(*ta);  // rows read where they lie
        const float* a = direct ? nullptr : load(s, *ta, kA);
        float* outf = room<float>(kD, td->elements());
        std::int32_t* outi = room<std::int32_t>(kD, td->elements());
        std::uint32_t* idx = room<std::uint32_t>(kB, ta->cols);
        for (std::uint32_t r = 0; r < ta->rows; ++r) {
            const float* row = direct ? row_of(s, *ta, r) : a + std::uint64_t{r} * ta->cols;
            if (i.op == JAL_OP_VREDSUM) {
                float sum = 0;
                for (std::uint32_t c = 0; c < ta->cols; ++c) sum += row[c];
                outf[r] = sum;
            } else if (i.op == JAL_OP_VREDMAX) {
                float m = row[0];
                for (std::uint32_t c = 1; c < ta->cols; ++c) m = fmax_of(m, row[c]);
                outf[r] = m;
            } else if (i.op == JAL_OP_VARGMAX) {
                std::uint32_t best = 0;
                for (std::uint32_t c = 1; c < ta->cols; ++c)
                    if (row[c] > row[best] || (std::isnan(row[best]) && !std::isnan(row[c])))
                        best = c;
                outi[r] = static_cast<std::int32_t>(best);
            } else {
                // Descending; NaN sorts last; ties keep the lower index first.
                std::iota(idx, idx + ta->cols, 0u);
                auto greater = [&](std::uint32_t x, std::uint32_t y) {
                    if (std::isnan(row[y])) return !std::isnan(row[x]);
                    return row[x] > row[y];
                };
                std::partial_sort(idx, idx + k, idx + ta->cols,
                                  [&](std::uint32_t x, std::uint32_t y) {
                                      return greater(x, y) || (!greater(y, x) && x < y);
                                  });
                for (std::uint32_t j = 0; j < k; ++j) {
                    outi[std::uint64_t{r} * k + j] = static_cast<std::int32_t>(idx[j]);
                    outf[std::uint64_t{r} * k + j] = row[idx[j]];
                }
            }
        }
        if (ints)
            store_raw(s, *td, outi);
        else
            store_raw(s, *td, outf);
        return kOk;
    }
    case JAL_OP_VCVT: {
        const Tile* ta = tile(s, i.b);
        if (!ta || i.c || i.d || !td->same_shape(*ta)) return kBad;
        if (i.imm != JAL_CVT_OCP && i.imm != JAL_CVT_GGML) return kBad;
        op.reads[0] = ta->span();
        op.convert_elems = n;
        if (!compute) return kOk;
        const float* v = load(s, *ta, kA);
        for (std::uint32_t r = 0; r < td->rows; ++r)
            jal::numerics::quantize_row(static_cast<jal_dtype>(td->dtype),
                                        v + std::uint64_t{r} * td->cols,
                                        s.l1 + td->addr + std::uint64_t{r} * td->stride, td->cols,
                                        static_cast<jal_cvt_mode>(i.imm));
        return kOk;
    }
    case JAL_OP_VCOPY: {
        const Tile* ta = tile(s, i.b);
        if (!ta || i.c || i.d || i.imm || !td->same_shape(*ta) || td->dtype != ta->dtype)
            return kBad;
        op.reads[0] = ta->span();
        op.elems = n;
        if (!compute) return kOk;
        const std::uint64_t rb = row_bytes(td->dtype, td->cols);
        if (!ta->span().overlaps(td->span())) {
            for (std::uint32_t r = 0; r < td->rows; ++r)
                std::memcpy(s.l1 + td->addr + std::uint64_t{r} * td->stride,
                            s.l1 + ta->addr + std::uint64_t{r} * ta->stride, rb);
            return kOk;
        }
        std::byte* tmp = room<std::byte>(kA, rb * td->rows);
        for (std::uint32_t r = 0; r < td->rows; ++r)
            std::memcpy(tmp + r * rb, s.l1 + ta->addr + std::uint64_t{r} * ta->stride, rb);
        for (std::uint32_t r = 0; r < td->rows; ++r)
            std::memcpy(s.l1 + td->addr + std::uint64_t{r} * td->stride, tmp + r * rb, rb);
        return kOk;
    }
    case JAL_OP_VFILL: {
        if (i.b || i.c || i.d || (td->dtype != JAL_DT_F32 && td->dtype != JAL_DT_I32)) return kBad;
        op.elems = n;
        if (!compute) return kOk;
        if (td->addr % 4 == 0 && td->stride % 4 == 0) {
            for (std::uint32_t r = 0; r < td->rows; ++r)
                std::fill_n(reinterpret_cast<std::int32_t*>(s.l1 + td->addr +
                                                            std::uint64_t{r} * td->stride),
                            td->cols, i.imm);
            return kOk;
        }
        std::int32_t* v = room<std::int32_t>(kA, n);
        std::fill(v, v + n, i.imm);
        store_raw(s, *td, v);
        return kOk;
    }
    case JAL_OP_VMASK: {
        if (i.b >= 32 || i.c >= 32 || i.d || i.imm < 0 || td->dtype != JAL_DT_F32) return kBad;
        op.reads[0] = td->span();
        op.elems = n;
        if (!compute) return kOk;
        const bool direct = f32_rows(*td);
        float* v = direct ? nullptr : load(s, *td, kA);
        const auto q0 = static_cast<std::int64_t>(s.x[i.b]),
                   k0 = static_cast<std::int64_t>(s.x[i.c]);
        for (std::uint32_t r = 0; r < td->rows; ++r) {
            float* row = direct ? row_of(s, *td, r) : v + std::uint64_t{r} * td->cols;
            for (std::uint32_t c = 0; c < td->cols; ++c) {
                const std::int64_t q = q0 + r, key = k0 + c;
                if (key > q || (i.imm > 0 && q - key >= i.imm))
                    row[c] = -std::numeric_limits<float>::infinity();
            }
        }
        if (!direct) store_raw(s, *td, v);
        return kOk;
    }
    case JAL_OP_VIOTA: {
        if (i.b >= 32 || i.c >= 32 || i.d || i.imm ||
            (td->dtype != JAL_DT_F32 && td->dtype != JAL_DT_I32))
            return kBad;
        op.elems = n;
        if (!compute) return kOk;
        const std::uint64_t start = s.x[i.b], step = s.x[i.c];
        // Every row is start, start + step, ...: one row computed, then copied (no
        // division an element).
        const std::uint32_t cols = td->cols;
        auto fill = [&](auto* v, auto element) {
            if (td->addr % 4 == 0 && td->stride % 4 == 0) {  // in L1: row 0, then its copies
                auto* row0 = reinterpret_cast<decltype(v)>(s.l1 + td->addr);
                for (std::uint32_t c = 0; c < cols; ++c) row0[c] = element(start + c * step);
                for (std::uint32_t r = 1; r < td->rows; ++r)
                    std::memcpy(s.l1 + td->addr + std::uint64_t{r} * td->stride, row0, cols * 4u);
                return;
            }
            for (std::uint32_t c = 0; c < cols; ++c) v[c] = element(start + c * step);
            for (std::uint64_t k = cols; k < n; k += cols) std::memcpy(v + k, v, cols * 4u);
            store_raw(s, *td, v);
        };
        if (td->dtype == JAL_DT_I32)
            fill(room<std::int32_t>(kA, n), [](std::uint64_t x) {
                return static_cast<std::int32_t>(static_cast<std::uint32_t>(x));
            });
        else
            fill(room<float>(kA, n),
                 [](std::uint64_t x) { return static_cast<float>(static_cast<std::int64_t>(x)); });
        return kOk;
    }
    default:
        return JAL_STATUS_INVALID_OPCODE;
    }
}

}  // namespace jal::emu::exec
