// moe_combine.cpp: each token's k expert outputs, weighted and summed (moe.hpp). The
// order (w0*e0 + w1*e1) + w2*e2 ... with each product rounded is ggml's: ggml_mul by the
// weights, then a chain of ggml_add.
#include <jal/kernels/library/moe.hpp>

#include "../linear/norm_rows.hpp"
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

// Expert j of every token in the block from row0: rows t·k + j (addr is scratch).
void emit_load_expert(Builder& b, uint32_t j, X addr, X row0, X experts, X expert_stride,
                      X token_stride, T t, Q q)
{
    b.mul(addr, row0, token_stride);
    b.add(addr, addr, experts);
    if (j) {
        X off = b.x();
        b.li(off, j);
        b.mul(off, off, expert_stride);
        b.add(addr, addr, off);
        b.free(off);
    }
    b.tload(t, addr, token_stride, q);
}

// MoeCombineConfig::norm: the rows being stored, normalised into the first expert buffer
// (free by then; the squares go there first) while the store still reads them, and stored
// again as BF16 through the second.
struct CombineNorm {
    X weight{}, normed{}, normed_stride{};  // the arguments (declared after `rows`)
    T tnw{}, tsq{}, tsc{}, tn{};
    uint32_t l1_sc = 0;

    void declare(Builder& b)
    {
        weight = b.arg("norm_weight", JAL_ARG_ADDRESS);
        normed = b.arg("normed", JAL_ARG_ADDRESS);
        normed_stride = b.arg("normed_stride");
    }

    // The weight, loaded once, and each block row's scale.
    void load(Builder& b, uint32_t cols, uint32_t R, X one, X cols_reg, Q q)
    {
        tnw = b.t(), tsq = b.t(), tsc = b.t(), tn = b.t();
        l1_sc = b.l1_alloc(R * 4);
        X l1_nw = constant(b, b.l1_alloc(cols * 4));
        X w_stride = constant(b, cols * 4ull);
        b.tdesc(tnw, l1_nw, one, cols_reg, JAL_DT_F32);
        b.tload(tnw, weight, w_stride, q);
        b.wait(q);
        b.free(w_stride);
        b.free(l1_nw);
        b.free(weight);
    }

    // `to` holds the block's n rows, their store issued on q; l1 and addr are scratch.
    void emit(Builder& b, const MoeCombineConfig& cfg, T to, X l1_e0, X l1_e1, X n, X one,
              X cols_reg, X l1, X addr, X row0, Q q)
    {
        b.tdesc(tsq, l1_e0, n, cols_reg, JAL_DT_F32);
        b.li(l1, l1_sc);
        b.tdesc(tsc, l1, n, one, JAL_DT_F32);
        linear::detail::emit_rms_norm_rows_into(b, tsq, to, tsq, tsc, tnw, cfg.cols, cfg.norm_eps);
        b.tdesc(tn, l1_e1, n, cols_reg, JAL_DT_BF16);
        b.vcvt(tn, tsq, cfg.norm_mode);
        store_rows(b, tn, addr, row0, normed, normed_stride, q);  // waits for both stores
    }
};
}  // namespace

uint32_t MoeCombineConfig::rows_per_block() const
{
    // The sum, the expert rows in flight, the weights and, normalising, each row's scale
    // (the squares and the BF16 rows reuse the first expert buffer) and the norm weight.
    const uint64_t per_row = (1ull + buffers(*this)) * cols * 4 + 4ull * k + (norm ? 4 : 0);
    const uint64_t budget = kL1Budget - (norm ? uint64_t{cols} * 4 : 0);
    return block_rows ? block_rows : rows_that_fit(per_row, budget, 64);
}

CodeObject build_moe_combine(const MoeCombineConfig& cfg)
{
    const std::string name = "moe_combine_c" + std::to_string(cfg.cols) + "_k" +
                             std::to_string(cfg.k) + (cfg.residual ? "_res" : "") +
                             (cfg.norm ? "_norm" : "");
    require(cfg.cols > 0 && cfg.k > 0, name, "cols and k must be positive");
    require(!cfg.norm || cfg.k >= 2, name, "norm needs k >= 2 (a second expert buffer)");
    const uint32_t R = cfg.rows_per_block(), nb = buffers(cfg);
    Builder b(name);

    X experts = b.arg("experts", JAL_ARG_ADDRESS);
    X expert_stride = b.arg("expert_stride");
    X weights = b.arg("weights", JAL_ARG_ADDRESS);
    X out = b.arg("out", JAL_ARG_ADDRESS);
    X out_stride = b.arg("out_stride");
    X rows = b.arg("rows");
    CombineNorm norm;
    if (cfg.norm) norm.declare(b);
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
    if (cfg.norm) norm.load(b, cfg.cols, R, one, cols, q);

    for_slice_blocks(b, rows, R, [&](X row0, X n) {
        X addr = b.x(), l1 = b.x();
        auto load_expert = [&](uint32_t j) {
            emit_load_expert(b, j, addr, row0, experts, expert_stride, token_stride, te[j % nb],
                             qe[j % nb]);
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
        if (cfg.norm) {  // the normalisation runs under the store
            row_address(b, addr, row0, out, out_stride);
            b.tstore(to, addr, out_stride, q);
            norm.emit(b, cfg, to, l1_e[0], l1_e[1], n, one, cols, l1, addr, row0, q);
        } else {
            store_rows(b, to, addr, row0, out, out_stride, q);
        }
        b.free(l1);
        b.free(addr);
    });
    b.end();
    return b.finish();
}

std::vector<uint64_t> moe_combine_args(const MoeCombineConfig& cfg, const TensorRef& experts,
                                       const TensorRef& weights, const TensorRef& out,
                                       const TensorRef& norm_weight, const TensorRef& normed)
{
    const std::string k = "moe_combine";
    check_tensor(out, JAL_DT_F32, cfg.cols, 0, k, "out");
    check_tensor(experts, JAL_DT_F32, cfg.cols, out.rows * cfg.k, k, "experts");
    check_tensor(weights, JAL_DT_F32, cfg.k, out.rows, k, "weights");
    require(stride_of(weights) == cfg.k * 4ull, k, "weights must be packed");
    std::vector<uint64_t> a{experts.va, stride_of(experts), weights.va,
                            out.va,     stride_of(out),     out.rows};
    if (cfg.norm) {
        check_tensor(norm_weight, JAL_DT_F32, cfg.cols, 1, k, "norm_weight");
        check_tensor(normed, JAL_DT_BF16, cfg.cols, out.rows, k, "normed");
        a.insert(a.end(), {norm_weight.va, normed.va, stride_of(normed)});
    }
    return a;
}

jal_dispatch_report moe_combine(Launcher& launcher, const Program& program,
                                const MoeCombineConfig& config, const TensorRef& experts,
                                const TensorRef& weights, const TensorRef& out,
                                const DispatchOptions& options)
{
    return launcher.run(program, args_of(moe_combine_args(config, experts, weights, out)), options);
}

}  // namespace jal::kernels
