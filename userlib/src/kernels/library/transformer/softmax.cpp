// softmax.cpp: row softmax with optional sinks (see softmax.hpp for the formula).
#include <jal/kernels/library/softmax.hpp>

#include "row_blocks.hpp"
#include "tensor_checks.hpp"

namespace jal::kernels {

using namespace transformer_detail;

uint32_t SoftmaxConfig::rows_per_block() const
{
    return block_rows ? block_rows : rows_that_fit(cols * 4ull + 12, kL1Budget, 64);
}

CodeObject build_softmax(const SoftmaxConfig& cfg)
{
    const std::string name =
        std::string(cfg.sinks ? "softmax_sinks_c" : "softmax_c") + std::to_string(cfg.cols);
    require_cols(cfg.cols, name);
    const uint32_t R = cfg.rows_per_block();
    Builder b(name);

    X x = b.arg("x", JAL_ARG_ADDRESS);
    X x_stride = b.arg("x_stride");
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    X rows = b.arg("rows");
    X sinks = b.arg("sinks", JAL_ARG_ADDRESS);
    X rows_per_sink = b.arg("rows_per_sink");
    X n_sinks = b.arg("n_sinks");

    X l1_x = constant(b, b.l1_alloc(R * cfg.cols * 4));
    X l1_m = constant(b, b.l1_alloc(R * 4));
    X l1_s = constant(b, b.l1_alloc(R * 4));
    X l1_k = constant(b, b.l1_alloc(R * 4));
    X one = constant(b, 1);
    X cols = constant(b, cfg.cols);
    T tx = b.t(), tm = b.t(), ts = b.t(), tk = b.t();
    Q q = b.q();

    for_slice_blocks(b, rows, R, [&](X row0, X n) {
        X addr = b.x();
        b.tdesc(tx, l1_x, n, cols, JAL_DT_F32);
        b.tdesc(tm, l1_m, n, one, JAL_DT_F32);
        b.tdesc(ts, l1_s, n, one, JAL_DT_F32);
        load_rows(b, tx, addr, row0, x, x_stride, q);
        if (cfg.scale != 1.0f) b.vscale(tx, tx, cfg.scale);
        b.vredmax(tm, tx);
        if (cfg.sinks) {
            // The sink of each row, written element by element: the mapping from row
            // to sink is integer arithmetic the vector engine does not have.
            b.tdesc(tk, l1_k, n, one, JAL_DT_F32);
            b.for_range(zero, n, 1, [&](X i) {
                X idx = b.x();
                X bits = b.x();
                b.add(idx, row0, i);
                b.divu(idx, idx, rows_per_sink);
                b.remu(idx, idx, n_sinks);
                b.muli(idx, idx, 4);
                b.add(idx, idx, sinks);
                b.lw(bits, idx);
                b.twrite(bits, tk, i, 0);
                b.free(bits);
                b.free(idx);
            });
            b.vmax(tm, tm, tk);  // the sink takes part in the maximum
        }
        b.vsub(tx, tx, tm);
        b.vexp(tx, tx);
        b.vredsum(ts, tx);
        if (cfg.sinks) {
            b.vsub(tk, tk, tm);  // ... and in the denominator only
            b.vexp(tk, tk);
            b.vadd(ts, ts, tk);
        }
        b.vrecip(ts, ts);
        b.vmul(tx, tx, ts);
        store_rows(b, tx, addr, row0, out, out_stride, q);
        b.free(addr);
    });
    b.end();
    return b.finish();
}

std::vector<uint64_t> softmax_args(const SoftmaxConfig& cfg, const TensorRef& x,
                                   const TensorRef& out, const TensorRef& sinks,
                                   uint32_t rows_per_sink)
{
    const std::string k = "softmax";
    check_tensor(x, JAL_DT_F32, cfg.cols, 0, k, "x");
    check_tensor(out, JAL_DT_F32, cfg.cols, x.rows, k, "out");
    uint64_t n_sinks = 1;
    if (cfg.sinks) {
        check_tensor(sinks, JAL_DT_F32, 0, 1, k, "sinks");
        n_sinks = uint64_t{sinks.rows} * sinks.cols;
        require(n_sinks > 0 && rows_per_sink > 0, k,
                "sinks need at least one value and rows_per_sink > 0");
        require(sinks.rows == 1 || stride_of(sinks) == uint64_t{sinks.cols} * 4, k,
                "sinks must be packed");
    }
    return {x.va,
            stride_of(x),
            out.va,
            stride_of(out),
            x.rows,
            cfg.sinks ? sinks.va : 0,
            cfg.sinks ? rows_per_sink : 1,
            n_sinks};
}

jal_dispatch_report softmax(Launcher& launcher, const Program& program, const SoftmaxConfig& config,
                            const TensorRef& x, const TensorRef& out, const TensorRef& sinks,
                            uint32_t rows_per_sink, const DispatchOptions& options)
{
    return launcher.run(program, args_of(softmax_args(config, x, out, sinks, rows_per_sink)),
                        options);
}

}  // namespace jal::kernels
