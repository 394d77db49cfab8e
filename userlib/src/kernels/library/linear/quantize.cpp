// Activation quantization (quantize.hpp): rows of F32 through VCVT, double-buffered.
#include <jal/kernels/library/quantize.hpp>

#include <jal/isa/numerics.hpp>

#include "checks.hpp"
#include "emit.hpp"
#include "tiles.hpp"

namespace jal::kernels::linear {

using namespace detail;

std::string quantize_name(const QuantizeConfig& c)
{
    return "quantize_dt" + std::to_string(c.out) + "_m" + std::to_string(c.m) + "k" +
           std::to_string(c.k) + (c.mode == JAL_CVT_GGML ? "_ggml" : "");
}

CodeObject build_quantize(const QuantizeConfig& c)
{
    const std::string name = quantize_name(c);
    const uint64_t orow = numerics::row_bytes(c.out, c.k);
    require(c.m != 0 && c.k != 0 && orow != 0 && c.out != JAL_DT_I32, name, "bad shape or format");
    // Rows per block: both F32 buffers and both output buffers within 2 MiB.
    const uint32_t rb = block_rows(name, 2 * (uint64_t{c.k} * 4 + orow), c.m);

    Builder b(name);
    X x = b.arg("x", JAL_ARG_ADDRESS);
    X x_stride = b.arg("x_stride");
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    SliceShare share = emit_slice_range(b, c.m);
    const Label done = emit_skip_if_empty(b, share.count);
    {  // this slice's first row of x and of out
        X r = b.x();
        b.mul(r, share.begin, x_stride);
        b.add(x, x, r);
        b.mul(r, share.begin, out_stride);
        b.add(out, out, r);
        b.free(r);
    }
    const Blocks row_blocks = emit_blocks(b, share.count, rb);
    const X rb_reg = row_blocks.unit, blocks = row_blocks.count;
    X k_reg = emit_const(b, c.k);
    const uint32_t l1_in[2] = {b.l1_alloc(rb * c.k * 4), b.l1_alloc(rb * c.k * 4)};
    const uint32_t l1_out[2] = {b.l1_alloc(static_cast<uint32_t>(rb * orow)),
                                b.l1_alloc(static_cast<uint32_t>(rb * orow))};
    T tin[2] = {b.t(), b.t()}, tout[2] = {b.t(), b.t()};
    Q qin[2] = {b.q(), b.q()}, qst = b.q();

    emit_double_buffered(
        b, blocks,
        [&](X j, int buf) {
            X rows = emit_block_size(b, j, share.count, rb_reg);
            emit_tdesc_at(b, tin[buf], l1_in[buf], rows, k_reg, JAL_DT_F32);
            X a = emit_block_addr(b, j, rb_reg, x_stride, x);
            b.tload(tin[buf], a, x_stride, qin[buf]);
            b.free(a);
            b.free(rows);
        },
        [&](X j, int buf) {
            b.wait(qin[buf], 1);
            X rows = emit_block_size(b, j, share.count, rb_reg);
            emit_tdesc_at(b, tout[buf], l1_out[buf], rows, k_reg, c.out);
            b.vcvt(tout[buf], tin[buf], c.mode);
            X a = emit_block_addr(b, j, rb_reg, out_stride, out);
            b.tstore(tout[buf], a, out_stride, qst);
            b.free(a);
            b.free(rows);
        });
    return emit_finish(b, done);
}

}  // namespace jal::kernels::linear
