// moe_group_routing.cpp: DeepSeek-V3's sigmoid routing with the correction bias and expert
// groups (moe.hpp). Masks and selections are built from thresholds, as the tile ISA has
// no compare: an element at or above a row's threshold t gets clamp((x − t)·2¹⁰⁰ + 1, 0,
// 1) = 1, one below it 0 (any difference of O(1) values is at least 2⁻⁴⁰ or so, which 2¹⁰⁰
// lifts past 1).
#include <cfloat>

#include <jal/kernels/library/moe.hpp>

#include "row_blocks.hpp"
#include "tensor_checks.hpp"

namespace jal::kernels {

using namespace transformer_detail;

namespace {

constexpr float kBig = 0x1p100f;

struct Tiles {
    T s, b, bias, k, m, ids, w;  // rows × E (two), 1 × E, rows × k, rows × 1, rows × k (two)
    T gv, g2, gs, gsv, gk;  // groups: (rows·G) × E/G view of b, (rows·G) × 2, × 1, rows × G
};

struct Consts {
    X zero, one, sum_min, flt_max;
};

// m = the smallest element of each row of t (t is negated and restored).
void row_min(Builder& b, T m, T t)
{
    b.vneg(t, t);
    b.vredmax(m, t);
    b.vneg(t, t);
    b.vneg(m, m);
}

// x = 1 where x >= the row's threshold thr (rows × 1), else 0.
void at_or_above(Builder& b, T x, T thr, const Consts& c)
{
    b.vsub(x, x, thr);
    b.vscale(x, x, kBig);
    b.vadds(x, x, 1.0f);
    b.vclamp(x, x, c.zero, c.one);
}

// Masks (−2¹⁰⁰) every expert outside the n_group_used groups whose two largest b sum highest.
void mask_groups(Builder& b, const MoeGroupRoutingConfig& cfg, const Tiles& t, const Consts& c)
{
    b.vtopkv(t.g2, t.gv, 2);
    b.vredsum(t.gs, t.g2);
    b.vtopkv(t.gk, t.gsv, cfg.n_group_used);
    row_min(b, t.m, t.gk);
    at_or_above(b, t.gsv, t.m, c);  // 1 kept, 0 masked
    b.vadds(t.gs, t.gs, -1.0f);     // 0 kept, −1 masked
    b.vscale(t.gs, t.gs, kBig);     // 0 kept, −2¹⁰⁰ masked
    b.vadd(t.gv, t.gv, t.gs);       // broadcast over each group's experts
}

void emit_routing(Builder& b, const MoeGroupRoutingConfig& cfg, const Tiles& t, const Consts& c)
{
    b.vsigmoid(t.s, t.s);
    b.vadd(t.b, t.s, t.bias);
    if (cfg.grouped()) mask_groups(b, cfg, t, c);
    b.vtopkv(t.k, t.b, cfg.k);
    row_min(b, t.m, t.k);
    at_or_above(b, t.b, t.m, c);  // 1 for the chosen experts
    b.vmul(t.b, t.b, t.s);        // their unbiased s, 0 elsewhere
    b.vtopk(t.ids, t.b, cfg.k);
    b.vtopkv(t.w, t.b, cfg.k);
    if (cfg.norm) {
        b.vredsum(t.m, t.w);
        b.vclamp(t.m, t.m, c.sum_min, c.flt_max);
        b.vrecip(t.m, t.m);
        b.vmul(t.w, t.w, t.m);
    }
    if (cfg.scale != 1.0f) b.vscale(t.w, t.w, cfg.scale);
}

// Tile t at L1 offset `at` (a register only while the descriptor is written: the kernel
// needs every register it can keep).
void tdesc_at(Builder& b, T t, uint32_t at, X rows, X cols, jal_dtype dt = JAL_DT_F32)
{
    X a = constant(b, at);
    b.tdesc(t, a, rows, cols, dt);
    b.free(a);
}

void describe(Builder& b, const MoeGroupRoutingConfig& cfg, const Tiles& t,
              const std::vector<uint32_t>& l1, X n)
{
    X e = constant(b, cfg.n_expert), kk = constant(b, cfg.k), one = constant(b, 1);
    tdesc_at(b, t.s, l1[0], n, e);
    tdesc_at(b, t.b, l1[1], n, e);
    tdesc_at(b, t.k, l1[2], n, kk);
    tdesc_at(b, t.m, l1[3], n, one);
    tdesc_at(b, t.ids, l1[4], n, kk, JAL_DT_I32);
    tdesc_at(b, t.w, l1[5], n, kk);
    if (cfg.grouped()) {
        X ng = b.x(), per = constant(b, cfg.n_expert / cfg.n_group), g = constant(b, cfg.n_group);
        X two = constant(b, 2), gu = constant(b, cfg.n_group_used);
        b.muli(ng, n, static_cast<int32_t>(cfg.n_group));
        tdesc_at(b, t.gv, l1[1], ng, per);
        tdesc_at(b, t.g2, l1[6], ng, two);
        tdesc_at(b, t.gs, l1[7], ng, one);
        tdesc_at(b, t.gsv, l1[7], n, g);
        tdesc_at(b, t.gk, l1[8], n, gu);
        for (X r : {gu, two, g, per, ng}) b.free(r);
    }
    for (X r : {one, kk, e}) b.free(r);
}

void check_config(const MoeGroupRoutingConfig& cfg, const std::string& name)
{
    require(cfg.n_expert > 0 && cfg.k > 0 && cfg.k <= cfg.n_expert, name,
            "k must be in 1..n_expert");
    if (!cfg.grouped()) return;
    require(cfg.n_expert % cfg.n_group == 0 && cfg.n_expert / cfg.n_group >= 2, name,
            "the groups must divide the experts, at least 2 each");
    require(cfg.n_group_used >= 1 && cfg.n_group_used < cfg.n_group, name,
            "n_group_used must be in 1..n_group-1");
    require(cfg.n_group_used * (cfg.n_expert / cfg.n_group) >= cfg.k, name,
            "the kept groups must hold k experts");
}

}  // namespace

uint32_t MoeGroupRoutingConfig::rows_per_block() const
{
    const uint64_t per_row = 4ull * (2 * n_expert + 3 * k + 2 + 3 * n_group + n_group_used);
    return block_rows ? block_rows : rows_that_fit(per_row, kL1Budget, 64);
}

CodeObject build_moe_group_routing(const MoeGroupRoutingConfig& cfg)
{
    const std::string name = "moe_group_routing_e" + std::to_string(cfg.n_expert) + "_k" +
                             std::to_string(cfg.k) + "_g" + std::to_string(cfg.n_group) + "_" +
                             std::to_string(cfg.n_group_used);
    check_config(cfg, name);
    const uint32_t R = cfg.rows_per_block();
    Builder b(name);
    X logits = b.arg("logits", JAL_ARG_ADDRESS);
    X logits_stride = b.arg("logits_stride");
    X bias = b.arg("bias", JAL_ARG_ADDRESS);
    X ids = b.arg("ids", JAL_ARG_ADDRESS);
    X weights = b.arg("weights", JAL_ARG_ADDRESS);
    X rows = b.arg("rows");
    b.acquire();

    const uint32_t G = std::max<uint32_t>(cfg.n_group, 1);
    const uint64_t sizes[] = {4ull * R * cfg.n_expert,
                              4ull * R * cfg.n_expert,
                              4ull * R * cfg.k,
                              4ull * R,
                              4ull * R * cfg.k,
                              4ull * R * cfg.k,
                              8ull * R * G,
                              4ull * R * G,
                              4ull * R * cfg.n_group_used + 4};
    std::vector<uint32_t> l1;
    for (uint64_t sz : sizes) l1.push_back(b.l1_alloc(static_cast<uint32_t>(sz)));
    X l1_bias = constant(b, b.l1_alloc(cfg.n_expert * 4));
    Tiles t{b.t(), b.t(), b.t(), b.t(), b.t(), b.t(), b.t(), b.t(), b.t(), b.t(), b.t(), b.t()};
    Q q = b.q();
    {
        X one = constant(b, 1), e = constant(b, cfg.n_expert),
          stride = constant(b, cfg.n_expert * 4);
        b.tdesc(t.bias, l1_bias, one, e, JAL_DT_F32);
        b.tload(t.bias, bias, stride, q);
        b.wait(q, 1);
        for (X r : {stride, e, one}) b.free(r);
    }
    X k_bytes = constant(b, cfg.k * 4);
    for_slice_blocks(b, rows, R, [&](X row0, X n) {
        X addr = b.x(), waddr = b.x();
        describe(b, cfg, t, l1, n);
        load_rows(b, t.s, addr, row0, logits, logits_stride, q);
        const Consts c{constant(b, f32_bits(0.0f)), constant(b, f32_bits(1.0f)),
                       constant(b, f32_bits(6.103515625e-5f)), constant(b, f32_bits(FLT_MAX))};
        emit_routing(b, cfg, t, c);
        for (X r : {c.flt_max, c.sum_min, c.one, c.zero}) b.free(r);
        b.mul(addr, row0, k_bytes);
        b.add(waddr, addr, weights);
        b.add(addr, addr, ids);
        b.tstore(t.ids, addr, k_bytes, q);
        b.tstore(t.w, waddr, k_bytes, q);
        b.wait(q, 2);
        b.free(waddr);
        b.free(addr);
    });
    b.end();
    return b.finish();
}

std::vector<uint64_t> moe_group_routing_args(const MoeGroupRoutingConfig& cfg,
                                             const TensorRef& logits, const TensorRef& bias,
                                             const TensorRef& ids, const TensorRef& weights)
{
    const std::string k = "moe_group_routing";
    check_tensor(logits, JAL_DT_F32, cfg.n_expert, 0, k, "logits");
    check_tensor(bias, JAL_DT_F32, cfg.n_expert, 1, k, "bias");
    check_tensor(ids, JAL_DT_I32, cfg.k, logits.rows, k, "ids");
    check_tensor(weights, JAL_DT_F32, cfg.k, logits.rows, k, "weights");
    require(stride_of(ids) == cfg.k * 4ull && stride_of(weights) == cfg.k * 4ull, k,
            "ids and weights must be packed");
    return {logits.va, stride_of(logits), bias.va, ids.va, weights.va, logits.rows};
}

}  // namespace jal::kernels
