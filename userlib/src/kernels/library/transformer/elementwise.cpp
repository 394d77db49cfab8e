// elementwise.cpp: residual add and row-broadcast add/mul (elementwise.hpp).
#include <jal/kernels/library/elementwise.hpp>

#include "row_blocks.hpp"
#include "tensor_checks.hpp"

namespace jal::kernels {

using namespace transformer_detail;

uint32_t ElementwiseConfig::rows_per_block() const
{
    return block_rows ? block_rows : rows_that_fit(2ull * cols * 4, kL1Budget - cols * 4ull, 64);
}

CodeObject build_elementwise(const ElementwiseConfig& cfg)
{
    const std::string name = std::string(cfg.op == ElementwiseOp::add ? "add" : "mul") +
                             (cfg.broadcast_b ? "_row_c" : "_c") + std::to_string(cfg.cols);
    require_cols(cfg.cols, name);
    const uint32_t R = cfg.rows_per_block();
    Builder b(name);

    X a = b.arg("a", JAL_ARG_ADDRESS);
    X a_stride = b.arg("a_stride");
    X bv = b.arg("b", JAL_ARG_ADDRESS);
    X b_stride = b.arg("b_stride");
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    X rows = b.arg("rows");

    X l1_a = constant(b, b.l1_alloc(R * cfg.cols * 4));
    X l1_b = constant(b, b.l1_alloc((cfg.broadcast_b ? 1 : R) * cfg.cols * 4));
    X cols = constant(b, cfg.cols);
    T ta = b.t(), tb = b.t();
    Q q = b.q();

    if (cfg.broadcast_b) {
        X one = constant(b, 1);
        b.tdesc(tb, l1_b, one, cols, JAL_DT_F32);
        b.tload(tb, bv, zero, q);
        b.wait(q);
        b.free(one);
    }

    for_slice_blocks(b, rows, R, [&](X row0, X n) {
        X addr = b.x();
        b.tdesc(ta, l1_a, n, cols, JAL_DT_F32);
        b.mul(addr, row0, a_stride);
        b.add(addr, addr, a);
        b.tload(ta, addr, a_stride, q);
        if (!cfg.broadcast_b) {
            b.tdesc(tb, l1_b, n, cols, JAL_DT_F32);
            b.mul(addr, row0, b_stride);
            b.add(addr, addr, bv);
            b.tload(tb, addr, b_stride, q);
        }
        b.wait(q, cfg.broadcast_b ? 1 : 2);
        if (cfg.op == ElementwiseOp::add)
            b.vadd(ta, ta, tb);
        else
            b.vmul(ta, ta, tb);
        store_rows(b, ta, addr, row0, out, out_stride, q);
        b.free(addr);
    });
    b.end();
    return b.finish();
}

std::vector<uint64_t> elementwise_args(const ElementwiseConfig& cfg, const TensorRef& a,
                                       const TensorRef& b, const TensorRef& out)
{
    const std::string k = "elementwise";
    check_tensor(a, JAL_DT_F32, cfg.cols, 0, k, "a");
    check_tensor(b, JAL_DT_F32, cfg.cols, cfg.broadcast_b ? 1 : a.rows, k, "b");
    check_tensor(out, JAL_DT_F32, cfg.cols, a.rows, k, "out");
    return {a.va, stride_of(a), b.va, stride_of(b), out.va, stride_of(out), a.rows};
}

jal_dispatch_report elementwise(Launcher& launcher, const Program& program,
                                const ElementwiseConfig& config, const TensorRef& a,
                                const TensorRef& b, const TensorRef& out,
                                const DispatchOptions& options)
{
    return launcher.run(program, args_of(elementwise_args(config, a, b, out)), options);
}

}  // namespace jal::kernels
