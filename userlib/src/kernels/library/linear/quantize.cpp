// Activation quantization (quantize.hpp): rows of F32 through VCVT, double-buffered.
#include <jal/kernels/library/quantize.hpp>

#include <algorithm>

#include <jal/error.hpp>
#include <jal/isa/numerics.hpp>

#include "emit.hpp"

namespace jal::kernels::linear {

using namespace detail;

std::string quantize_name(const QuantizeConfig& c)
{
    return "quantize_dt" + std::to_string(c.out) + "_m" + std::to_string(c.m) + "k" +
           std::to_string(c.k) + (c.mode == JAL_CVT_GGML ? "_ggml" : "");
}

CodeObject build_quantize(const QuantizeConfig& c)
{
    const uint64_t orow = numerics::row_bytes(c.out, c.k);
    if (c.m == 0 || c.k == 0 || orow == 0 || c.out == JAL_DT_I32)
        throw Error(JAL_STATUS_INVALID_FIELD, quantize_name(c) + ": bad shape or format");
    // Rows per block: both F32 buffers and both output buffers within 2 MiB.
    const uint64_t per_row = 2 * (uint64_t{c.k} * 4 + orow);
    const uint32_t rb =
        static_cast<uint32_t>(std::max<uint64_t>(1, std::min<uint64_t>(c.m, (2u << 20) / per_row)));
    if (per_row > (3u << 20))
        throw Error(JAL_STATUS_INVALID_FIELD, quantize_name(c) + ": a row does not fit in L1");

    Builder b(quantize_name(c));
    X x = b.arg("x", JAL_ARG_ADDRESS);
    X x_stride = b.arg("x_stride");
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    SliceShare share = emit_slice_range(b, c.m);
    Label done = b.label();
    b.beq(share.count, zero, done);
    {  // this slice's first row of x and of out
        X r = b.x();
        b.mul(r, share.begin, x_stride);
        b.add(x, x, r);
        b.mul(r, share.begin, out_stride);
        b.add(out, out, r);
        b.free(r);
    }
    X rb_reg = emit_const(b, rb);
    X blocks = b.x();
    b.addi(blocks, share.count, static_cast<int32_t>(rb - 1));
    b.divu(blocks, blocks, rb_reg);
    X k_reg = emit_const(b, c.k);
    X stores = emit_const(b, 0);
    const uint32_t l1_in[2] = {b.l1_alloc(rb * c.k * 4), b.l1_alloc(rb * c.k * 4)};
    const uint32_t l1_out[2] = {b.l1_alloc(static_cast<uint32_t>(rb * orow)),
                                b.l1_alloc(static_cast<uint32_t>(rb * orow))};
    T tin[2] = {b.t(), b.t()}, tout[2] = {b.t(), b.t()};
    Q qin[2] = {b.q(), b.q()}, qst = b.q();

    auto rows_of = [&](X j) {  // min(rb, count − j·rb)
        X r = b.x();
        b.mul(r, j, rb_reg);
        b.sub(r, share.count, r);
        b.min(r, r, rb_reg);
        return r;
    };
    auto describe = [&](T t, uint32_t l1, X rows, jal_dtype dt) {
        X a = emit_const(b, l1);
        b.tdesc(t, a, rows, k_reg, dt);
        b.free(a);
    };
    emit_double_buffered(
        b, blocks,
        [&](X j, int buf) {
            X rows = rows_of(j);
            describe(tin[buf], l1_in[buf], rows, JAL_DT_F32);
            X a = b.x();
            b.mul(a, j, rb_reg);
            b.mul(a, a, x_stride);
            b.add(a, a, x);
            b.tload(tin[buf], a, x_stride, qin[buf]);
            b.free(a);
            b.free(rows);
        },
        [&](X j, int buf) {
            b.wait(qin[buf], 1);
            X rows = rows_of(j);
            describe(tout[buf], l1_out[buf], rows, c.out);
            b.vcvt(tout[buf], tin[buf], c.mode);
            X a = b.x();
            b.mul(a, j, rb_reg);
            b.mul(a, a, out_stride);
            b.add(a, a, out);
            b.tstore(tout[buf], a, out_stride, qst);
            b.addi(stores, stores, 1);
            b.free(a);
            b.free(rows);
        });
    emit_wait_n(b, qst, stores);
    b.bind(done);
    b.end();
    return b.finish();
}

}  // namespace jal::kernels::linear
