// moe_combine.cpp: each token's k expert outputs, weighted and summed (moe.hpp). The
// order (w0*e0 + w1*e1) + w2*e2 ... with each product rounded is ggml's: ggml_mul by the
// weights, then a chain of ggml_add.
#include <jal/kernels/library/moe.hpp>

#include "row_blocks.hpp"
#include "tensor_checks.hpp"

namespace jal::kernels {

using namespace transformer_detail;

uint32_t MoeCombineConfig::rows_per_block() const
{
    return block_rows ? block_rows : rows_that_fit(2ull * cols * 4 + 4ull * k, kL1Budget, 64);
}

CodeObject build_moe_combine(const MoeCombineConfig& cfg)
{
    const std::string name = "moe_combine_c" + std::to_string(cfg.cols) + "_k" +
                             std::to_string(cfg.k) + (cfg.residual ? "_res" : "");
    require(cfg.cols > 0 && cfg.k > 0, name, "cols and k must be positive");
    const uint32_t R = cfg.rows_per_block();
    Builder b(name);

    X experts = b.arg("experts", JAL_ARG_ADDRESS);
    X expert_stride = b.arg("expert_stride");
    X weights = b.arg("weights", JAL_ARG_ADDRESS);
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    X rows = b.arg("rows");

    const uint32_t l1_w_off = b.l1_alloc(R * cfg.k * 4);
    X l1_w = constant(b, l1_w_off);
    X l1_o = constant(b, b.l1_alloc(R * cfg.cols * 4));
    X l1_e = constant(b, b.l1_alloc(R * cfg.cols * 4));
    X cols = constant(b, cfg.cols);
    X kk = constant(b, cfg.k);
    X one = constant(b, 1);
    X k_bytes = constant(b, cfg.k * 4);
    X token_stride = b.x();  // bytes from one token's experts to the next token's
    b.muli(token_stride, expert_stride, static_cast<int32_t>(cfg.k));
    T tw = b.t(), twj = b.t(), to = b.t(), te = b.t();
    Q q = b.q();

    for_slice_blocks(b, rows, R, [&](X row0, X n) {
        X addr = b.x();
        X l1 = b.x();
        b.tdesc(tw, l1_w, n, kk, JAL_DT_F32);
        b.muli(addr, row0, static_cast<int32_t>(cfg.k * 4));
        b.add(addr, addr, weights);
        b.tload(tw, addr, k_bytes, q);
        b.tdesc(to, l1_o, n, cols, JAL_DT_F32);
        b.tdesc(te, l1_e, n, cols, JAL_DT_F32);
        b.wait(q);
        for (uint32_t j = 0; j < cfg.k; j++) {
            // expert j of every token in the block: rows t*k + j
            b.mul(addr, row0, token_stride);
            b.add(addr, addr, experts);
            if (j) {
                X off = b.x();
                b.li(off, j);
                b.mul(off, off, expert_stride);
                b.add(addr, addr, off);
                b.free(off);
            }
            b.tload(j ? te : to, addr, token_stride, q);
            b.wait(q);
            // weight j of every token: column j of the weights, a strided view
            b.li(l1, l1_w_off + j * 4);
            b.tdesc(twj, l1, n, one, JAL_DT_F32, cfg.k * 4);
            if (j) {
                b.vmul(te, te, twj);
                b.vadd(to, to, te);
            } else {
                b.vmul(to, to, twj);
            }
        }
        if (cfg.residual) {  // te is free again: the rows of out it adds to
            load_rows(b, te, addr, row0, out, out_stride, q);
            b.vadd(to, te, to);
        }
        store_rows(b, to, addr, row0, out, out_stride, q);
        b.free(l1);
        b.free(addr);
    });
    b.end();
    return b.finish();
}

std::vector<uint64_t> moe_combine_args(const MoeCombineConfig& cfg, const TensorRef& experts,
                                       const TensorRef& weights, const TensorRef& out)
{
    const std::string k = "moe_combine";
    check_tensor(out, JAL_DT_F32, cfg.cols, 0, k, "out");
    check_tensor(experts, JAL_DT_F32, cfg.cols, out.rows * cfg.k, k, "experts");
    check_tensor(weights, JAL_DT_F32, cfg.k, out.rows, k, "weights");
    require(stride_of(weights) == cfg.k * 4ull, k, "weights must be packed");
    return {experts.va, stride_of(experts), weights.va, out.va, stride_of(out), out.rows};
}

jal_dispatch_report moe_combine(Launcher& launcher, const Program& program,
                                const MoeCombineConfig& config, const TensorRef& experts,
                                const TensorRef& weights, const TensorRef& out,
                                const DispatchOptions& options)
{
    return launcher.run(program, args_of(moe_combine_args(config, experts, weights, out)), options);
}

}  // namespace jal::kernels
