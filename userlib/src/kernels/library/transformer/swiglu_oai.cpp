// swiglu_oai.cpp: GPT-OSS's clamped SwiGLU (swiglu.hpp).
#include <jal/kernels/library/swiglu.hpp>

#include <limits>

#include "../linear/swiglu_rows.hpp"
#include "row_blocks.hpp"
#include "tensor_checks.hpp"

namespace jal::kernels {

using namespace transformer_detail;

uint32_t SwigluConfig::rows_per_block() const
{
    return block_rows ? block_rows : rows_that_fit(3ull * cols * 4, kL1Budget, 64);
}

CodeObject build_swiglu_oai(const SwigluConfig& cfg)
{
    const std::string name = (cfg.oai ? "swiglu_oai_c" : "swiglu_c") + std::to_string(cfg.cols);
    require_cols(cfg.cols, name);
    require(cfg.limit > 0, name, "limit must be positive");
    const uint32_t R = cfg.rows_per_block();
    Builder b(name);

    X gate = b.arg("gate", JAL_ARG_ADDRESS);
    X gate_stride = b.arg("gate_stride");
    X up = b.arg("up", JAL_ARG_ADDRESS);
    X up_stride = b.arg("up_stride");
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    X rows = b.arg("rows");
    b.acquire();  // the arguments load while a staged program's previous stage finishes

    X l1_g = constant(b, b.l1_alloc(R * cfg.cols * 4));
    X l1_u = constant(b, b.l1_alloc(R * cfg.cols * 4));
    X l1_t = constant(b, b.l1_alloc(R * cfg.cols * 4));
    X cols = constant(b, cfg.cols);
    const linear::detail::SwigluBounds bounds = linear::detail::emit_swiglu_bounds(b, cfg.limit);
    T tg = b.t(), tu = b.t(), tt = b.t();
    Q q = b.q();

    for_slice_blocks(b, rows, R, [&](X row0, X n) {
        X addr = b.x();
        b.tdesc(tg, l1_g, n, cols, JAL_DT_F32);
        b.tdesc(tu, l1_u, n, cols, JAL_DT_F32);
        b.tdesc(tt, l1_t, n, cols, JAL_DT_F32);
        b.mul(addr, row0, gate_stride);
        b.add(addr, addr, gate);
        b.tload(tg, addr, gate_stride, q);
        b.mul(addr, row0, up_stride);
        b.add(addr, addr, up);
        b.tload(tu, addr, up_stride, q);
        b.wait(q, 2);
        if (cfg.oai)
            linear::detail::emit_swiglu_rows(b, tg, tu, tt, bounds, cfg.alpha);
        else
            linear::detail::emit_swiglu_plain_rows(b, tg, tu);
        store_rows(b, tg, addr, row0, out, out_stride, q);
        b.free(addr);
    });
    b.end();
    return b.finish();
}

std::vector<uint64_t> swiglu_oai_args(const SwigluConfig& cfg, const TensorRef& gate,
                                      const TensorRef& up, const TensorRef& out)
{
    const std::string k = "swiglu_oai";
    check_tensor(gate, JAL_DT_F32, cfg.cols, 0, k, "gate");
    check_tensor(up, JAL_DT_F32, cfg.cols, gate.rows, k, "up");
    check_tensor(out, JAL_DT_F32, cfg.cols, gate.rows, k, "out");
    return {gate.va, stride_of(gate), up.va, stride_of(up), out.va, stride_of(out), gate.rows};
}

jal_dispatch_report swiglu_oai(Launcher& launcher, const Program& program,
                               const SwigluConfig& config, const TensorRef& gate,
                               const TensorRef& up, const TensorRef& out,
                               const DispatchOptions& options)
{
    return launcher.run(program, args_of(swiglu_oai_args(config, gate, up, out)), options);
}

}  // namespace jal::kernels
