// moe_routing.cpp: top-k experts and their softmax weights per token (moe.hpp).
#include <jal/kernels/library/moe.hpp>

#include "../linear/routing_rows.hpp"
#include "row_blocks.hpp"
#include "tensor_checks.hpp"

namespace jal::kernels {

using namespace transformer_detail;

uint32_t MoeRoutingConfig::rows_per_block() const
{
    return block_rows ? block_rows : rows_that_fit(4ull * (n_expert + 2 * k + 2), kL1Budget, 64);
}

namespace {

// MoeRoutingConfig::local_experts: the n rows' ids made local, the weights of pairs whose
// expert is on another chip zeroed.
void keep_local_experts(Builder& b, const MoeRoutingConfig& cfg, T ti, T tw, X n)
{
    X base = constant(b, cfg.expert_base);
    X local = constant(b, cfg.local_experts);
    X zero{};  // x0 reads 0: the F32 bits of 0.0
    b.for_range(zero, n, 1, [&](X r) {
        X id = b.x();
        for (uint32_t j = 0; j < cfg.k; j++) {
            Label here = b.label();
            b.tread(id, ti, r, static_cast<int32_t>(j));
            b.sub(id, id, base);
            b.twrite(id, ti, r, static_cast<int32_t>(j));
            b.bltu(id, local, here);  // below expert_base wraps to a large unsigned value
            b.twrite(zero, tw, r, static_cast<int32_t>(j));
            b.bind(here);
        }
        b.free(id);
    });
    b.free(local);
    b.free(base);
}

}  // namespace

CodeObject build_moe_routing(const MoeRoutingConfig& cfg)
{
    std::string name =
        "moe_routing_e" + std::to_string(cfg.n_expert) + "_k" + std::to_string(cfg.k);
    if (cfg.local_experts)
        name +=
            "_local" + std::to_string(cfg.expert_base) + "+" + std::to_string(cfg.local_experts);
    require(cfg.k > 0 && cfg.k <= cfg.n_expert, name, "k must be in 1..n_expert");
    require(uint64_t{cfg.expert_base} + cfg.local_experts <= cfg.n_expert, name,
            "the local experts must be among n_expert");
    const uint32_t R = cfg.rows_per_block();
    Builder b(name);

    X logits = b.arg("logits", JAL_ARG_ADDRESS);
    X logits_stride = b.arg("logits_stride");
    X ids = b.arg("ids", JAL_ARG_ADDRESS);
    X weights = b.arg("weights", JAL_ARG_ADDRESS);
    X rows = b.arg("rows");
    b.acquire();  // the arguments load while a staged program's previous stage finishes

    X l1_l = constant(b, b.l1_alloc(R * cfg.n_expert * 4));
    X l1_i = constant(b, b.l1_alloc(R * cfg.k * 4));
    X l1_w = constant(b, b.l1_alloc(R * cfg.k * 4));
    X l1_m = constant(b, b.l1_alloc(R * 4));
    X l1_s = constant(b, b.l1_alloc(R * 4));
    X n_expert = constant(b, cfg.n_expert);
    X one = constant(b, 1);
    X k_bytes = constant(b, cfg.k * 4);
    T tl = b.t(), ti = b.t(), tw = b.t(), tm = b.t(), ts = b.t();
    Q q = b.q();

    for_slice_blocks(b, rows, R, [&](X row0, X n) {
        X addr = b.x();
        X kk = constant(b, cfg.k);
        b.tdesc(tl, l1_l, n, n_expert, JAL_DT_F32);
        b.tdesc(ti, l1_i, n, kk, JAL_DT_I32);
        b.tdesc(tw, l1_w, n, kk, JAL_DT_F32);
        b.tdesc(tm, l1_m, n, one, JAL_DT_F32);
        b.tdesc(ts, l1_s, n, one, JAL_DT_F32);
        load_rows(b, tl, addr, row0, logits, logits_stride, q);
        linear::detail::emit_topk_softmax(b, tl, ti, tw, tm, ts, cfg.k);
        if (cfg.local_experts) keep_local_experts(b, cfg, ti, tw, n);
        b.mul(addr, row0, k_bytes);
        X waddr = b.x();
        b.add(waddr, addr, weights);
        b.add(addr, addr, ids);
        b.tstore(ti, addr, k_bytes, q);
        b.tstore(tw, waddr, k_bytes, q);
        b.wait(q, 2);
        b.free(waddr);
        b.free(kk);
        b.free(addr);
    });
    b.end();
    return b.finish();
}

std::vector<uint64_t> moe_routing_args(const MoeRoutingConfig& cfg, const TensorRef& logits,
                                       const TensorRef& ids, const TensorRef& weights)
{
    const std::string k = "moe_routing";
    check_tensor(logits, JAL_DT_F32, cfg.n_expert, 0, k, "logits");
    check_tensor(ids, JAL_DT_I32, cfg.k, logits.rows, k, "ids");
    check_tensor(weights, JAL_DT_F32, cfg.k, logits.rows, k, "weights");
    require(stride_of(ids) == cfg.k * 4ull && stride_of(weights) == cfg.k * 4ull, k,
            "ids and weights must be packed");
    return {logits.va, stride_of(logits), ids.va, weights.va, logits.rows};
}

jal_dispatch_report moe_routing(Launcher& launcher, const Program& program,
                                const MoeRoutingConfig& config, const TensorRef& logits,
                                const TensorRef& ids, const TensorRef& weights,
                                const DispatchOptions& options)
{
    return launcher.run(program, args_of(moe_routing_args(config, logits, ids, weights)), options);
}

}  // namespace jal::kernels
