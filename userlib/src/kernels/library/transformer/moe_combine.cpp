// moe_combine.cpp: each token's k expert outputs, weighted and summed (moe.hpp). The
// order (w0*e0 + w1*e1) + w2*e2 ... with each product rounded is ggml's: ggml_mul by the
// weights, then a chain of ggml_add.
#include <jal/kernels/library/moe.hpp>

#include "row_blocks.hpp"

#include "tensor_checks.hpp"
#include <algorithm>
#include <vector>

namespace jal::kernels {

using namespace transformer_detail;

namespace {
// Expert rows in flight at once: a buffer (and a queue) each, so the k loads of a block
// overlap instead of each waiting for the last.
uint32_t buffers(const MoeCombineConfig& cfg)
{
    return std::min<uint32_t>(cfg.k, 8);
}
}  // namespace

uint32_t MoeCombineConfig::rows_per_block() const
{
    // The sum, the expert rows in flight, and the weights.
    const uint64_t per_row = (1ull + buffers(*this)) * cols * 4 + 4ull * k;
    return block_rows ? block_rows : rows_that_fit(per_row, kL1Budget, 64);
}

CodeObject build_moe_combine(const MoeCombineConfig& cfg)
{
    const std::string name = "moe_combine_c" + std::to_string(cfg.cols) + "_k" +
                             std::to_string(cfg.k) + (cfg.residual ? "_res" : "");
    require(cfg.cols > 0 && cfg.k > 0, name, "cols and k must be positive");
    const uint32_t R = cfg.rows_per_block(), nb = buffers(cfg);
    Builder b(name);

    X experts = b.arg("experts", JAL_ARG_ADDRESS);
    X expert_stride = b.arg("expert_stride");
    X weights = b.arg("weights", JAL_ARG_ADDRESS);
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    X rows = b.arg("rows");
    b.acquire();  // the arguments load while a staged program's previous stage finishes

    const uint32_t l1_w_off = b.l1_alloc(R * cfg.k * 4);
    X l1_w = constant(b, l1_w_off);
    X l1_o = constant(b, b.l1_alloc(R * cfg.cols * 4));
    std::vector<X> l1_e(nb);
    for (X& a : l1_e) a = constant(b, b.l1_alloc(R * cfg.cols * 4));
    X cols = constant(b, cfg.cols);
    X kk = constant(b, cfg.k);
    X one = constant(b, 1);
    X k_bytes = constant(b, cfg.k * 4);
    X token_stride = b.x();  // bytes from one token's experts to the next token's
    b.muli(token_stride, expert_stride, static_cast<int32_t>(cfg.k));
    T tw = b.t(), twj = b.t(), to = b.t();
    std::vector<T> te(nb);
    std::vector<Q> qe(nb);
    for (uint32_t i = 0; i < nb; i++) te[i] = b.t(), qe[i] = b.q();
    Q q = b.q();

    for_slice_blocks(b, rows, R, [&](X row0, X n) {
        X addr = b.x();
        X l1 = b.x();
        // Expert j of every token in the block: rows t·k + j.
        auto load_expert = [&](uint32_t j) {
            b.mul(addr, row0, token_stride);
            b.add(addr, addr, experts);
            if (j) {
                X off = b.x();
                b.li(off, j);
                b.mul(off, off, expert_stride);
                b.add(addr, addr, off);
                b.free(off);
            }
            b.tload(te[j % nb], addr, token_stride, qe[j % nb]);
        };
        b.tdesc(tw, l1_w, n, kk, JAL_DT_F32);
        b.muli(addr, row0, static_cast<int32_t>(cfg.k * 4));
        b.add(addr, addr, weights);
        b.tload(tw, addr, k_bytes, q);
        b.tdesc(to, l1_o, n, cols, JAL_DT_F32);
        for (uint32_t i = 0; i < nb; i++) b.tdesc(te[i], l1_e[i], n, cols, JAL_DT_F32);
        for (uint32_t j = 0; j < nb; j++) load_expert(j);
        b.wait(q);
        // The order (w0·e0 + w1·e1) + w2·e2 ... of ggml, one expert as it arrives.
        for (uint32_t j = 0; j < cfg.k; j++) {
            b.wait(qe[j % nb]);
            // weight j of every token: column j of the weights, a strided view
            b.li(l1, l1_w_off + j * 4);
            b.tdesc(twj, l1, n, one, JAL_DT_F32, cfg.k * 4);
            if (j) {
                b.vmul(te[j % nb], te[j % nb], twj);
                b.vadd(to, to, te[j % nb]);
            } else {
                b.vmul(to, te[0], twj);
            }
            if (j + nb < cfg.k) load_expert(j + nb);  // into the buffer just used
        }
        if (cfg.residual) {  // the rows of out it adds to
            load_rows(b, te[0], addr, row0, out, out_stride, q);
            b.vadd(to, te[0], to);
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
