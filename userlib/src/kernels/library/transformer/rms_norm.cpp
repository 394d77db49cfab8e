// rms_norm.cpp: y = x / sqrt(mean(x^2) + eps) * w over rows of F32 (llama.cpp's
// ggml_rms_norm followed by ggml_mul with the norm weight).
#include <jal/kernels/library/norm.hpp>

#include "../linear/norm_rows.hpp"
#include "row_blocks.hpp"
#include "tensor_checks.hpp"

namespace jal::kernels {

using namespace transformer_detail;

uint32_t RmsNormConfig::rows_per_block() const
{
    // x, x^2, the per-row scale and, converted, the rows written.
    const uint64_t converted = out == JAL_DT_F32 ? 0 : uint64_t{cols} * 2;
    return block_rows ? block_rows
                      : rows_that_fit(2ull * cols * 4 + 4 + converted, kL1Budget - cols * 4ull, 64);
}

CodeObject build_rms_norm(const RmsNormConfig& cfg)
{
    const bool convert = cfg.out != JAL_DT_F32;
    const std::string name = "rms_norm_c" + std::to_string(cfg.cols) + (convert ? "_bf16" : "");
    require_cols(cfg.cols, name);
    require(cfg.out == JAL_DT_F32 || cfg.out == JAL_DT_BF16, name, "out must be F32 or BF16");
    const uint32_t R = cfg.rows_per_block();
    Builder b(name);

    X x = b.arg("x", JAL_ARG_ADDRESS);
    X x_stride = b.arg("x_stride");
    X w = b.arg("weight", JAL_ARG_ADDRESS);
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    X rows = b.arg("rows");

    const uint32_t row_bytes = cfg.cols * 4;
    X l1_w = constant(b, b.l1_alloc(row_bytes));
    X l1_x = constant(b, b.l1_alloc(R * row_bytes));
    X l1_sq = constant(b, b.l1_alloc(R * row_bytes));
    X l1_s = constant(b, b.l1_alloc(R * 4));
    X l1_o = convert ? constant(b, b.l1_alloc(R * cfg.cols * 2)) : X{};
    X one = constant(b, 1);
    X cols = constant(b, cfg.cols);
    X w_stride = constant(b, row_bytes);

    T tw = b.t(), tx = b.t(), tsq = b.t(), ts = b.t();
    T to = convert ? b.t() : tx;
    Q q = b.q();
    b.tdesc(tw, l1_w, one, cols, JAL_DT_F32);
    b.tload(tw, w, w_stride, q);
    b.wait(q);

    for_slice_blocks(b, rows, R, [&](X row0, X n) {
        X addr = b.x();
        b.tdesc(tx, l1_x, n, cols, JAL_DT_F32);
        b.tdesc(tsq, l1_sq, n, cols, JAL_DT_F32);
        b.tdesc(ts, l1_s, n, one, JAL_DT_F32);
        load_rows(b, tx, addr, row0, x, x_stride, q);
        linear::detail::emit_rms_norm_rows(b, tx, tsq, ts, tw, cfg.cols, cfg.eps);
        if (convert) {
            b.tdesc(to, l1_o, n, cols, JAL_DT_BF16);
            b.vcvt(to, tx, cfg.out_mode);
        }
        store_rows(b, to, addr, row0, out, out_stride, q);
        b.free(addr);
    });
    b.end();
    return b.finish();
}

std::vector<uint64_t> rms_norm_args(const RmsNormConfig& cfg, const TensorRef& x,
                                    const TensorRef& weight, const TensorRef& out)
{
    const std::string k = "rms_norm";
    check_tensor(x, JAL_DT_F32, cfg.cols, 0, k, "x");
    check_tensor(weight, JAL_DT_F32, cfg.cols, 1, k, "weight");
    check_tensor(out, cfg.out, cfg.cols, x.rows, k, "out");
    return {x.va, stride_of(x), weight.va, out.va, stride_of(out), x.rows};
}

jal_dispatch_report rms_norm(Launcher& launcher, const Program& program,
                             const RmsNormConfig& config, const TensorRef& x,
                             const TensorRef& weight, const TensorRef& out,
                             const DispatchOptions& options)
{
    return launcher.run(program, args_of(rms_norm_args(config, x, weight, out)), options);
}

}  // namespace jal::kernels
