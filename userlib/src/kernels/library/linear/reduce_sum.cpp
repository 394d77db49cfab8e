// Sum of n vectors into one (collective.hpp): the reduction step of the chips' all-reduce
// and reduce-scatter, whose inputs are this chip's contribution and the peers' chunks
// staged in its memory.
#include <jal/kernels/library/collective.hpp>

#include "checks.hpp"
#include "emit.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear {

using namespace detail;

namespace {

constexpr uint32_t kBlock = 16384;  // elements a block: 64 KiB of F32 accumulator

uint32_t element_bytes(jal_dtype dt)
{
    return dt == JAL_DT_F32 ? 4 : 2;
}

const char* dtype_name(jal_dtype dt)
{
    switch (dt) {
    case JAL_DT_F32:
        return "f32";
    case JAL_DT_BF16:
        return "bf16";
    default:
        return "f16";
    }
}

// Block j of this slice's share: input k loaded into buffer k mod 2 while input k−1 is
// added (converted to F32 first when the vectors are BF16 or F16), then the F32 sum
// stored (converted back).
class ReduceSumKernel {
public:
    explicit ReduceSumKernel(const ReduceSumConfig& c) : c(c), b(reduce_sum_name(c)) {}
    CodeObject build();

private:
    void block(X j);
    void load(uint32_t k, X j, X cols);

    const ReduceSumConfig& c;
    Builder b;
    X table{}, out{}, begin{}, cnt{}, unit{}, one{};
    T tacc{}, tin[2]{}, tf32{};
    Q qin[2]{}, qout{};
    uint32_t l1_acc = 0, l1_in[2]{}, l1_f32 = 0;
};

void ReduceSumKernel::load(uint32_t k, X j, X cols)
{
    const uint32_t esize = element_bytes(c.dtype);
    X idx = emit_const(b, k);
    X base = emit_table_entry(b, table, idx);
    X first = b.x();  // begin + j·unit: this block's first element
    b.mul(first, j, unit);
    b.add(first, first, begin);
    b.muli(first, first, static_cast<int32_t>(esize));
    b.add(base, base, first);
    emit_tdesc_at(b, tin[k % 2], l1_in[k % 2], one, cols, c.dtype);
    b.tload(tin[k % 2], base, zero, qin[k % 2]);
    b.free(first), b.free(base), b.free(idx);
}

void ReduceSumKernel::block(X j)
{
    X cols = b.x();  // min(unit, cnt − j·unit)
    X left = b.x();
    b.mul(left, j, unit);
    b.sub(left, cnt, left);
    b.min(cols, left, unit);
    b.free(left);
    load(0, j, cols);
    emit_tdesc_at(b, tacc, l1_acc, one, cols, JAL_DT_F32);
    if (c.dtype != JAL_DT_F32) emit_tdesc_at(b, tf32, l1_f32, one, cols, JAL_DT_F32);
    for (uint32_t k = 0; k < c.inputs; ++k) {
        if (k + 1 < c.inputs) load(k + 1, j, cols);
        b.wait(qin[k % 2], 1);
        const T in = tin[k % 2];
        if (k == 0) {
            b.vcvt(tacc, in);  // F32 to F32 is a copy
        } else if (c.dtype == JAL_DT_F32) {
            b.vadd(tacc, tacc, in);
        } else {
            b.vcvt(tf32, in);
            b.vadd(tacc, tacc, tf32);
        }
    }
    X dst = emit_block_elem_addr(b, j, unit, static_cast<int32_t>(element_bytes(c.dtype)), out);
    X off = b.x();
    b.muli(off, begin, static_cast<int32_t>(element_bytes(c.dtype)));
    b.add(dst, dst, off);
    b.free(off);
    T result = tacc;
    if (c.dtype != JAL_DT_F32) {
        emit_tdesc_at(b, tin[0], l1_in[0], one, cols, c.dtype);
        b.vcvt(tin[0], tacc);
        result = tin[0];
    }
    b.tstore(result, dst, zero, qout);
    b.wait(qout, 1);  // the accumulator and buffer 0 are reused by the next block
    b.free(dst), b.free(cols);
}

CodeObject ReduceSumKernel::build()
{
    table = b.arg("inputs", JAL_ARG_ADDRESS);
    out = b.arg("out", JAL_ARG_ADDRESS);
    const SliceShare share = emit_slice_range(b, c.length);
    b.free(share.slice);
    begin = share.begin;
    cnt = share.count;
    Label done = emit_skip_if_empty(b, cnt);
    one = emit_const(b, 1);
    const uint32_t esize = element_bytes(c.dtype);
    l1_acc = b.l1_alloc(kBlock * 4);
    for (int i = 0; i < 2; ++i) l1_in[i] = b.l1_alloc(kBlock * esize);
    if (c.dtype != JAL_DT_F32) l1_f32 = b.l1_alloc(kBlock * 4);
    tacc = b.t(), tin[0] = b.t(), tin[1] = b.t(), tf32 = b.t();
    qin[0] = b.q(), qin[1] = b.q(), qout = b.q();
    const Blocks blocks = emit_blocks(b, cnt, kBlock);
    unit = blocks.unit;
    b.for_range(zero, blocks.count, 1, [&](X j) { block(j); });
    return emit_finish(b, done);
}

}  // namespace

std::string reduce_sum_name(const ReduceSumConfig& c)
{
    return "reduce_sum_" + std::string(dtype_name(c.dtype)) + "_n" + std::to_string(c.inputs) +
           "_l" + std::to_string(c.length);
}

CodeObject build_reduce_sum(const ReduceSumConfig& c)
{
    const std::string name = reduce_sum_name(c);
    require(c.length != 0, name, "empty vectors");
    require(c.inputs >= 1, name, "no inputs");
    require(c.dtype == JAL_DT_F32 || c.dtype == JAL_DT_BF16 || c.dtype == JAL_DT_F16, name,
            "vectors must be F32, BF16 or F16");
    return ReduceSumKernel(c).build();
}

std::vector<uint64_t> reduce_sum_args(uint64_t inputs_table, uint64_t out)
{
    return {inputs_table, out};
}

}  // namespace jal::kernels::linear
