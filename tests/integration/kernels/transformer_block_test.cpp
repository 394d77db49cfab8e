// The attention half of a GPT-OSS block through the library's host calls (Program +
// Launcher + TensorRefs): RoPE/YaRN on Q and K (positions from an I32 tensor for the
// prefill, from a start position for decode steps), KV append, attention with sinks and a
// sliding window, the residual add and the next RMSNorm; against the chained double
// references (transformer_reference.hpp). The Q/K/V projections are the linear kernels'
// and are left out: Q, K and V are random.
//
// Tolerance: the attention's 2e-5 + 1e-4 relative, then a rounding of the add and the
// norm's 1e-4 relative: |err| <= 5e-5 + 2e-4 |want|.
#include <bit>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include <jal/kernels/library/transformer.hpp>

#include "transformer_fixture.hpp"
#include "transformer_reference.hpp"

namespace jk = jal::kernels;
using jal::test::all_near;
using namespace jal::test::ref;

// The residual add and RMSNorm after attention, in double precision: resid = attn + x
// (rows of x from position pos0), normed = rms_norm(resid) * w.
void residual_norm_ref(const std::vector<double>& attn, const std::vector<float>& x,
                       const std::vector<float>& w, uint32_t pos0, uint32_t rows, uint32_t n_embd,
                       std::vector<double>& resid, std::vector<double>& normed)
{
    resid.resize(attn.size());
    normed.resize(attn.size());
    for (size_t i = 0; i < attn.size(); i++) resid[i] = attn[i] + x[size_t{pos0} * n_embd + i];
    for (uint32_t r = 0; r < rows; r++) {
        double ss = 0;
        for (uint32_t c = 0; c < n_embd; c++)
            ss += resid[size_t{r} * n_embd + c] * resid[size_t{r} * n_embd + c];
        const double scale = 1 / std::sqrt(ss / n_embd + 1e-5);
        for (uint32_t c = 0; c < n_embd; c++)
            normed[size_t{r} * n_embd + c] = resid[size_t{r} * n_embd + c] * scale * w[c];
    }
}

class TransformerBlockTest : public jal::test::TransformerKernelTest {
protected:
    // YaRN's cos/sin tables for n_ctx positions, replicated on the mask's slices.
    struct RopeTablesOnDevice {
        jal::test::DeviceTensor cos, sin;
        jk::RopeTablesRef ref;
    };
    RopeTablesOnDevice upload_rope_tables(uint32_t n_ctx, uint64_t mask)
    {
        const jk::RopeTables tables = jk::rope_yarn_tables(jk::YarnParams{}, n_ctx);
        RopeTablesOnDevice t{upload(tables.cos, n_ctx, tables.half, 0, mask, JAL_PLACE_REPLICATED),
                             upload(tables.sin, n_ctx, tables.half, 0, mask, JAL_PLACE_REPLICATED),
                             {}};
        t.ref = {.cos_va = t.cos.ref.va, .sin_va = t.sin.ref.va, .n_positions = n_ctx};
        return t;
    }
    // GPT-OSS 120B's attention (64 query heads, 8 KV heads, a 4096-position cache) for
    // modelled time only: a 128-token prefill, a decode step at position 4000 and, when the
    // slices divide into 8 splits, flash decoding; with a 128-token window and without.
    void gpt_oss_attention_timing(
        uint64_t mask, const jal::test::DeviceTensor& q, const jal::test::DeviceTensor& kv,
        const jal::test::DeviceTensor& sinks, jk::KvCache& cache,
        const std::function<void(const char*, const jal_dispatch_report&)>& report);
};

TEST_F(TransformerBlockTest, RopeAttentionResidualAndNormThroughHostCalls)
{
    const Shape s{.n_head = 16, .n_head_kv = 2, .head_dim = 64, .window = 8, .sinks = true};
    const uint32_t n_ctx = 64, prefill = 20, decode = 3, total = prefill + decode;
    const uint32_t qcols = s.n_head * s.head_dim, kvcols = s.n_head_kv * s.head_dim, n_embd = qcols;
    const uint64_t mask = slices(4);
    const jk::DispatchOptions on{.slice_mask = mask};

    auto q = jal::test::random_normal(size_t{total} * qcols, 70);
    auto k = jal::test::random_normal(size_t{total} * kvcols, 71);
    auto v = jal::test::random_normal(size_t{total} * kvcols, 72);
    auto x = jal::test::random_normal(size_t{total} * n_embd, 73);
    auto w = jal::test::random_uniform(n_embd, 74, 0.5, 1.5);
    auto sinks = jal::test::random_uniform(s.n_head, 75, -1.0, 3.0);

    // reference: every position's rotated Q and K, then attention over the whole sequence
    std::vector<int32_t> all_pos(total);
    for (uint32_t p = 0; p < total; p++) all_pos[p] = static_cast<int32_t>(p);
    const auto q_rot = rope_ref(q, total, s.n_head, all_pos);
    const auto k_rot = rope_ref(k, total, s.n_head_kv, all_pos);
    const std::vector<double> v_d(v.begin(), v.end());

    // device: tables, weights, programs, cache
    const RopeTablesOnDevice rope_tables = upload_rope_tables(n_ctx, mask);
    const jk::RopeTablesRef& tref = rope_tables.ref;
    auto dw = upload(w, 1, n_embd, 0, mask, JAL_PLACE_REPLICATED);
    auto dsinks = upload(sinks, 1, s.n_head, 0, mask, JAL_PLACE_REPLICATED);

    const jk::RopeConfig rq{.n_head = s.n_head, .head_dim = s.head_dim};
    const jk::RopeConfig rk{.n_head = s.n_head_kv, .head_dim = s.head_dim};
    const jk::KvAppendConfig app{.n_head_kv = s.n_head_kv, .head_dim = s.head_dim, .n_ctx = n_ctx};
    const jk::AttentionConfig att{.n_head = s.n_head,
                                  .n_head_kv = s.n_head_kv,
                                  .head_dim = s.head_dim,
                                  .n_ctx = n_ctx,
                                  .window = s.window,
                                  .sinks = true};
    const jk::ElementwiseConfig add{.op = jk::ElementwiseOp::add, .cols = n_embd};
    const jk::RmsNormConfig norm{.cols = n_embd, .eps = 1e-5f};
    jk::Program p_rq(device(), context(), queue(), jk::build_rope_neox(rq));
    jk::Program p_rk(device(), context(), queue(), jk::build_rope_neox(rk));
    jk::Program p_app(device(), context(), queue(), jk::build_kv_append(app));
    jk::Program p_att(device(), context(), queue(), jk::build_attention(att));
    jk::Program p_add(device(), context(), queue(), jk::build_elementwise(add));
    jk::Program p_norm(device(), context(), queue(), jk::build_rms_norm(norm));
    jk::KvCache cache(device(), context(), queue(),
                      {.n_head_kv = s.n_head_kv, .head_dim = s.head_dim, .n_ctx = n_ctx},
                      jk::kv_head_masks(mask, s.n_head_kv));

    auto step = [&](uint32_t pos0, uint32_t rows, bool positions_tensor) {
        SCOPED_TRACE("positions " + std::to_string(pos0) + ".." + std::to_string(pos0 + rows - 1));
        auto dq = upload(rows_of(q, pos0, rows, qcols), rows, qcols);
        auto dk = upload(rows_of(k, pos0, rows, kvcols), rows, kvcols);
        auto dv = upload(rows_of(v, pos0, rows, kvcols), rows, kvcols);
        auto dx = upload(rows_of(x, pos0, rows, n_embd), rows, n_embd);
        auto dattn = alloc(rows, qcols);
        auto dnorm = alloc(rows, n_embd);
        jal::test::DeviceTensor dpos;
        if (positions_tensor) dpos = upload_i32(rows_of(all_pos, pos0, rows, 1), rows, 1);
        const jk::TensorRef pos_ref = positions_tensor ? dpos.ref : jk::TensorRef{};

        jk::rope_neox(launcher(), p_rq, rq, dq.ref, pos_ref, pos0, tref, on);
        jk::rope_neox(launcher(), p_rk, rk, dk.ref, pos_ref, pos0, tref, on);
        jk::kv_append(launcher(), p_app, app, dk.ref, dv.ref, pos0, cache.heads_va(), on);
        jk::attention(launcher(), p_att, att, dq.ref, dattn.ref, pos0, cache.heads_va(),
                      dsinks.ref.va, on);
        jk::elementwise(launcher(), p_add, add, dattn.ref, dx.ref, dx.ref,
                        on);  // residual, in place
        jk::rms_norm(launcher(), p_norm, norm, dx.ref, dw.ref, dnorm.ref, on);

        auto attn =
            attention_ref(s, rows_of(q_rot, pos0, rows, qcols), rows, pos0, k_rot, v_d, sinks);
        std::vector<double> resid, normed;
        residual_norm_ref(attn, x, w, pos0, rows, n_embd, resid, normed);
        EXPECT_TRUE(all_near(download(dattn.ref), attn, 2e-5, 1e-4));
        EXPECT_TRUE(all_near(download(dx.ref), resid, 5e-5, 2e-4));
        EXPECT_TRUE(all_near(download(dnorm.ref), normed, 5e-5, 2e-4));
    };
    step(0, prefill, true);
    for (uint32_t i = 0; i < decode; i++)
        step(prefill + i, 1, i % 2 == 1);  // decode from a start position, and from a tensor
}

void TransformerBlockTest::gpt_oss_attention_timing(
    uint64_t mask, const jal::test::DeviceTensor& q, const jal::test::DeviceTensor& kv,
    const jal::test::DeviceTensor& sinks, jk::KvCache& cache,
    const std::function<void(const char*, const jal_dispatch_report&)>& report)
{
    const jk::DispatchOptions timing{.slice_mask = mask, .timing_only = true};
    const uint32_t n_ctx = 4096;
    auto prog = [&](const jk::CodeObject& co) {
        return jk::Program(device(), context(), queue(), co);
    };
    const jk::KvAppendConfig app{.n_head_kv = 8, .head_dim = 64, .n_ctx = n_ctx};
    jk::Program p_app = prog(jk::build_kv_append(app));
    for (uint32_t window : {128u, 0u}) {
        const jk::AttentionConfig att{
            .n_head = 64, .n_head_kv = 8, .n_ctx = n_ctx, .window = window, .sinks = true};
        jk::Program p_att = prog(jk::build_attention(att));
        const std::string w_name = window ? " window 128" : " full";
        report(("attention prefill 128" + w_name).c_str(),
               jk::attention(launcher(), p_att, att, q.ref, q.ref, 0, cache.heads_va(),
                             sinks.ref.va, timing));
        jk::TensorRef q1 = q.ref, kv1 = kv.ref;
        q1.rows = kv1.rows = 1;
        report("kv_append decode",
               jk::kv_append(launcher(), p_app, app, kv1, kv1, 4000, cache.heads_va(), timing));
        report(("attention decode at 4000" + w_name).c_str(),
               jk::attention(launcher(), p_att, att, q1, q1, 4000, cache.heads_va(), sinks.ref.va,
                             timing));
        if (std::popcount(mask) % 8 == 0) {  // flash decoding: 8 key splits a head, 64 items
            // a cache placed for this split: head g on the 8 slices of its items
            jk::KvCache split_cache(device(), context(), queue(),
                                    {.n_head_kv = 8, .head_dim = 64, .n_ctx = n_ctx},
                                    jk::kv_head_masks(mask, 8, 8));
            jk::AttentionConfig split = att;
            split.key_splits = 8;
            report(("attention decode at 4000, 8 splits" + w_name).c_str(),
                   jk::attention(launcher(), prog(jk::build_attention(split)), split, q1, q1, 4000,
                                 split_cache.heads_va(), sinks.ref.va, timing));
        }
    }
}

TEST_F(TransformerBlockTest, GptOssShapesRunForTimeOnlyOnEveryUsableSlice)
{
    // GPT-OSS 120B's shapes (n_embd 2880, 64 query heads, 8 KV heads, 128 experts, top 4,
    // a 4096-position cache), a 128-token prefill and a decode step at position 4000, run
    // for modelled time only: every kernel must fit L1 and its registers at full size and
    // finish without a fault. The modelled times are printed, not checked.
    const uint64_t mask = launcher().usable_slice_mask();
    const jk::DispatchOptions timing{.slice_mask = mask, .timing_only = true};
    const uint32_t tokens = 128, n_embd = 2880, n_ctx = 4096, qcols = 64 * 64, kvcols = 8 * 64;
    auto x = alloc(tokens, n_embd, JAL_DT_F32, 0, mask, JAL_PLACE_INTERLEAVED);
    auto w = alloc(1, n_embd, JAL_DT_F32, 0, mask, JAL_PLACE_REPLICATED);
    auto q = alloc(tokens, qcols, JAL_DT_F32, 0, mask, JAL_PLACE_INTERLEAVED);
    auto kv = alloc(tokens, kvcols, JAL_DT_F32, 0, mask, JAL_PLACE_INTERLEAVED);
    auto ff = alloc(tokens * 4, n_embd, JAL_DT_F32, 0, mask, JAL_PLACE_INTERLEAVED);
    auto logits = alloc(tokens, 128, JAL_DT_F32, 0, mask, JAL_PLACE_INTERLEAVED);
    auto ids = alloc(tokens, 4, JAL_DT_I32, 0, mask, JAL_PLACE_INTERLEAVED);
    auto weights = alloc(tokens, 4, JAL_DT_F32, 0, mask, JAL_PLACE_INTERLEAVED);
    auto sinks = alloc(1, 64, JAL_DT_F32, 0, mask, JAL_PLACE_REPLICATED);
    auto pos = alloc(tokens, 1, JAL_DT_I32, 0, mask, JAL_PLACE_INTERLEAVED);
    const RopeTablesOnDevice rope_tables = upload_rope_tables(n_ctx, mask);
    const jk::RopeTablesRef& tref = rope_tables.ref;
    jk::KvCache cache(device(), context(), queue(),
                      {.n_head_kv = 8, .head_dim = 64, .n_ctx = n_ctx}, jk::kv_head_masks(mask, 8));

    auto report = [](const char* what, const jal_dispatch_report& r) {
        EXPECT_EQ(r.status, JAL_STATUS_OK) << what;
        std::printf("  %-34s %10.3f us modelled, %llu instructions\n", what, r.modelled_ns / 1e3,
                    static_cast<unsigned long long>(r.instructions));
    };
    auto prog = [&](const jk::CodeObject& co) {
        return jk::Program(device(), context(), queue(), co);
    };

    const jk::RmsNormConfig norm{.cols = n_embd};
    report("rms_norm 128 x 2880", jk::rms_norm(launcher(), prog(jk::build_rms_norm(norm)), norm,
                                               x.ref, w.ref, x.ref, timing));
    const jk::RopeConfig rq{.n_head = 64};
    report("rope_neox Q 128 x 64 heads", jk::rope_neox(launcher(), prog(jk::build_rope_neox(rq)),
                                                       rq, q.ref, pos.ref, 0, tref, timing));
    const jk::KvAppendConfig app{.n_head_kv = 8, .head_dim = 64, .n_ctx = n_ctx};
    jk::Program p_app = prog(jk::build_kv_append(app));
    report("kv_append 128 tokens",
           jk::kv_append(launcher(), p_app, app, kv.ref, kv.ref, 0, cache.heads_va(), timing));
    gpt_oss_attention_timing(mask, q, kv, sinks, cache, report);
    const jk::SwigluConfig sw{.cols = n_embd};
    report("swiglu_oai 512 x 2880", jk::swiglu_oai(launcher(), prog(jk::build_swiglu_oai(sw)), sw,
                                                   ff.ref, ff.ref, ff.ref, timing));
    const jk::MoeRoutingConfig route{.n_expert = 128, .k = 4};
    report("moe_routing 128 x 128",
           jk::moe_routing(launcher(), prog(jk::build_moe_routing(route)), route, logits.ref,
                           ids.ref, weights.ref, timing));
    const jk::MoeCombineConfig comb{.cols = n_embd, .k = 4};
    report("moe_combine 128 x 4 x 2880",
           jk::moe_combine(launcher(), prog(jk::build_moe_combine(comb)), comb, ff.ref, weights.ref,
                           x.ref, timing));
    const jk::ElementwiseConfig add{.op = jk::ElementwiseOp::add, .cols = n_embd};
    report("residual add 128 x 2880", jk::elementwise(launcher(), prog(jk::build_elementwise(add)),
                                                      add, x.ref, x.ref, x.ref, timing));
}
