// The DeepSeek-V3 graph (deepseek_runtime.hpp), one dispatch a kernel:
//
//   embedding(tokens)                                                x (T × E)
//   per layer:
//     a = gemm(rmsnorm(x, attn_norm), q_a | kv_a)                     [q_a (Lq) | c (C) | k_pe (R)]
//     q = gemm(rmsnorm(q_a, q_a_norm), q_b)                           H heads of [q_nope | q_pe]
//     rms_norm(c, kv_a_norm) in place; rope(q_pe), rope(k_pe)
//     qf = expert_gemm(q, k_abs) (heads as experts)                   H heads of [k_b·q_nope | q_pe]
//     per sequence: kv_append([c | k_pe] as key and value); attention(qf) (MQA, C + R wide)
//     o = expert_gemm(attention out, v_abs); x += gemm(o, attn_output)
//     dense: x += gemm(swiglu(gemm(rmsnorm(x, ffn_norm), gate | up)), down)
//     MoE:   group routing of gemm(rmsnorm(x), router) with the bias; routed gate | up, the
//            shared expert's gate | up, both SwiGLUs, routed down; x += shared down;
//            x += Σ w·routed (moe_combine with the residual)
//   logits = gemm(rmsnorm(x rows that need them, output_norm), output)
#include <fmt/format.h>

#include <jal/kernels/library/embedding.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/gemm.hpp>
#include <jal/kernels/library/transformer.hpp>

#include "deepseek_runtime.hpp"
#include "expert_split.hpp"
#include "gemm_split.hpp"
#include "runtime_common.hpp"

namespace jal::model::detail {

namespace lin = jal::kernels::linear;
namespace k = jal::kernels;

namespace {

lin::Numerics lin_numerics(Numerics n)
{
    return n == Numerics::ggml ? lin::Numerics::ggml : lin::Numerics::native;
}

}  // namespace

const k::Program& DeepseekRuntime::program(const std::string& key,
                                           const std::function<k::CodeObject()>& build)
{
    return cached_program(programs_, key, build, device_, context_, *queue_, all_mask_);
}

void DeepseekRuntime::add(const k::Program& p, uint64_t mask, const k::Args& args, const char* what)
{
    launch_->add(p, args, graph_dispatch(mask, o_.timing_only, what));
}

void DeepseekRuntime::gemm(const DsMatrix& m, uint32_t rows, uint64_t x, uint64_t x_stride,
                           uint64_t y, uint64_t y_stride, const char* what, const DsVec* norm,
                           bool accumulate)
{
    lin::GemmConfig g;
    g.m = rows, g.n = m.n, g.k = m.kdim, g.weight = m.dtype, g.bias = false;
    g.numerics = lin_numerics(o_.numerics);
    g.rms_norm = norm != nullptr, g.norm_eps = c_.rms_eps, g.accumulate = accumulate;
    // Row groups for a prompt's many rows (docs/model-runtime.md, "The graph"): the same bits.
    g.row_groups = gemm_row_groups(rows, S_, uint64_t{m.kdim} * 4,
                                   (m.n + S_ - 1) / S_ * m.row_bytes, [&](uint32_t groups) {
                                       lin::GemmConfig p = g;
                                       p.row_groups = groups;
                                       return lin::plan_gemm(p).m_chunk;
                                   });
    const std::string key =
        fmt::format("gemm m{} n{} k{} w{} n{} norm{} acc{} g{}", g.m, g.n, g.k, int(g.weight),
                    int(g.numerics), g.rms_norm, accumulate, g.row_groups);
    const k::Program& code = program(key, [&] { return lin::build_gemm(g); });
    std::vector<uint64_t> args = {x, x_stride};
    if (norm) args.push_back(va(norm->place));
    args.insert(args.end(), {va(m.table), m.row_bytes, y, y_stride});
    add(code, all_mask_, k::Args(args), what);
}

void DeepseekRuntime::expert_gemm(const DsMatrix& m, uint32_t tokens, uint32_t kk, bool per_pair,
                                  uint64_t x, uint64_t x_stride, uint64_t ids, uint64_t y,
                                  uint64_t y_stride, const char* what, const DsVec* norm)
{
    const bool by_rows = split_by_rows(m, tokens, kk, per_pair);
    lin::ExpertGemmConfig g;
    g.tokens = tokens, g.k = kk, g.experts = m.experts, g.n = m.n, g.kdim = m.kdim;
    g.weight = m.dtype, g.bias = false, g.input_per_pair = per_pair;
    g.numerics = lin_numerics(o_.numerics);
    g.rms_norm = norm != nullptr, g.norm_eps = c_.rms_eps;
    g.split = by_rows ? lin::ExpertSplit::rows : lin::ExpertSplit::experts;
    const std::string key =
        fmt::format("egemm t{} k{} e{} n{} k{} w{} p{} n{} norm{} r{}", g.tokens, g.k, g.experts,
                    g.n, g.kdim, int(g.weight), per_pair, int(g.numerics), g.rms_norm, by_rows);
    if (o_.timing_only && !by_rows && lin::uniform_active(g) < g.experts) {
        timing_expert_gemm(m, tokens, kk, x, x_stride, y, what, norm);
        return;
    }
    const k::Program& code = program(key, [&] { return lin::build_expert_gemm(g); });
    std::vector<uint64_t> args = {x, x_stride};
    if (norm) args.push_back(va(norm->place));
    args.insert(args.end(), {ids, va(by_rows ? m.row_table : m.table), m.row_bytes,
                             m.row_bytes * m.n, y, y_stride});
    add(code, all_mask_, k::Args(args), what);
}

// Split by rows when the second layout is kept, the kernel can stream, and its busiest
// slice then reads fewer bytes (the GPT-OSS runtime's rule, expert_split.hpp).
bool DeepseekRuntime::split_by_rows(const DsMatrix& m, uint32_t tokens, uint32_t kk,
                                    bool per_pair) const
{
    return splits_by_rows(m, tokens, kk, S_, per_pair);
}

// Timing only, with fewer pairs than experts: the ids read as zeros inside a kernel, so the
// expert GEMM is charged as a plain GEMM of the same traffic (as the GPT-OSS runtime does,
// docs/model-runtime.md "Timing-only mode"): the experts uniform routing makes active, on
// the slices that hold them, ⌈pairs / active⌉ rows each.
void DeepseekRuntime::timing_expert_gemm(const DsMatrix& m, uint32_t tokens, uint32_t kk,
                                         uint64_t x, uint64_t x_stride, uint64_t y,
                                         const char* what, const DsVec* norm)
{
    const uint32_t E = m.experts, span = std::max<uint32_t>(1, E / kk);
    std::vector<bool> active(E, false);
    for (uint32_t t = 0; t < std::min(tokens, span); t++)
        for (uint32_t j = 0; j < kk; j++) active[lin::uniform_expert(E, kk, t, j)] = true;
    std::vector<uint32_t> per_slice(S_, 0);
    std::vector<uint64_t> first(S_, 0);
    uint32_t A = 0;
    for (uint32_t e = 0; e < E; e++) {
        if (!active[e]) continue;
        A++;
        for (uint32_t s = 0; s < S_; s++) {
            const lin::Range r = lin::slice_range(E, S_, s);
            if (e < r.begin || e >= r.end) continue;
            if (!per_slice[s]++)
                first[s] = va(m.shards[s]) + uint64_t{e - r.begin} * m.row_bytes * m.n;
            break;
        }
    }
    uint32_t busy = 0, most = 0;
    uint64_t mask = 0;
    std::vector<uint64_t> table;
    for (uint32_t s = 0; s < S_; s++)
        if (per_slice[s]) {
            busy++, most = std::max(most, per_slice[s]), mask |= 1ull << s;
            table.push_back(first[s]);
        }
    const std::string tkey = fmt::format("{}:{}:{}", static_cast<const void*>(&m), tokens, kk);
    auto it = timing_tables_.find(tkey);
    if (it == timing_tables_.end()) {
        auto mem = std::make_unique<runtime::Memory>(context_, 8ull * 64, JAL_PLACE_REPLICATED,
                                                     all_mask_, 0);
        launch_->upload(mem->va(), table.data(), table.size() * 8);
        it = timing_tables_.emplace(tkey, std::move(mem)).first;
    }
    lin::GemmConfig g;
    g.m = std::max<uint32_t>(1, (tokens * kk + A - 1) / A), g.n = busy * most * m.n, g.k = m.kdim;
    g.weight = m.dtype, g.numerics = lin_numerics(o_.numerics);
    g.rms_norm = norm != nullptr, g.norm_eps = c_.rms_eps;
    const std::string key = fmt::format("tgemm m{} n{} k{} w{} n{} norm{}", g.m, g.n, g.k,
                                        int(g.weight), int(g.numerics), g.rms_norm);
    const k::Program& code = program(key, [&] { return lin::build_gemm(g); });
    std::vector<uint64_t> args = {x, x_stride};
    if (norm) args.push_back(va(norm->place));
    args.insert(args.end(), {it->second->va(), m.row_bytes, y, uint64_t{g.n} * 4});
    add(code, mask, k::Args(args), what);
}

// RoPE (the kernel's NEOX halves: the weights' pe rows are permuted to match) on `rows`
// single heads of R dims, `stride` apart, at the positions listed at `positions`.
void DeepseekRuntime::rope(uint32_t rows, uint64_t x, uint64_t stride, uint64_t positions,
                           const char* what)
{
    k::RopeConfig r;
    r.n_head = 1, r.head_dim = c_.n_rot;
    r.block_rows = std::clamp<uint32_t>(rows, 1, r.rows_per_block());
    const k::Program& code = program(fmt::format("rope d{} b{}", c_.n_rot, r.block_rows),
                                     [&] { return k::build_rope_neox(r); });
    add(code, all_mask_, {x, stride, rows, positions, 0, va(rope_cos_.place), va(rope_sin_.place)},
        what);
}

// out = silu(gate) · up for rows of gate | up (cols each).
void DeepseekRuntime::swiglu(uint32_t rows, uint32_t cols, uint64_t gu, uint64_t out,
                             const char* what)
{
    k::SwigluConfig w;
    w.cols = cols, w.oai = false;
    w.block_rows = std::clamp<uint32_t>(rows, 1, w.rows_per_block());
    const k::Program& code = program(fmt::format("swiglu c{} b{}", cols, w.block_rows),
                                     [&] { return k::build_swiglu_oai(w); });
    const uint64_t C4 = uint64_t{cols} * 4;
    add(code, all_mask_, {gu, 2 * C4, gu + C4, 2 * C4, out, C4, rows}, what);
}

// Each sequence's latent rows into its cache, then its queries' attention over the cache:
// MQA, one KV head C + R wide. The caches are interleaved over every slice's HBM, so every
// slice reads them at once: a decode step's attention is split by keys over all slices
// (flash decoding, one sequence after another), a prompt's in items of up to 512 rows
// (queries × heads) on every slice.
void DeepseekRuntime::add_attention(uint32_t il, const std::vector<Segment>& segs)
{
    const uint64_t A4 = uint64_t{A_} * 4, QW = uint64_t{c_.n_head} * W_ * 4;
    const uint64_t lat = va(a_.a) + uint64_t{c_.q_lora_rank} * 4;
    const k::Program& append =
        program(fmt::format("kv_append d{} c{} t{}", W_, o_.n_ctx, int(kv_dtype_)), [&] {
            k::KvAppendConfig a;
            a.n_head_kv = 1, a.head_dim = W_, a.n_ctx = o_.n_ctx;
            a.kv_dtype = kv_dtype_;
            return k::build_kv_append(a);
        });
    for (const Segment& sg : segs) {
        const uint32_t j = static_cast<uint32_t>(sg.seq);
        const uint64_t heads = va(slots_[j].heads[il]);
        const bool wide = sg.rows > 1;
        add(append, mask_of(kv_slice(j, il), 1),
            {lat + sg.row0 * A4, A4, lat + sg.row0 * A4, A4, sg.rows, sg.pos0, heads}, "kv_append");
        const uint32_t qb = wide ? std::max(1u, 512 / c_.n_head) : 0, splits = wide ? 1 : S_;
        const k::Program& attn =
            program(fmt::format("mla h{} d{} c{} q{} s{} t{}", c_.n_head, W_, o_.n_ctx, qb, splits,
                                int(kv_dtype_)),
                    [&] {
                        k::AttentionConfig a;
                        a.n_head = c_.n_head, a.n_head_kv = 1, a.head_dim = W_, a.n_ctx = o_.n_ctx;
                        a.kv_dtype = kv_dtype_;
                        a.scale = static_cast<float>(kq_scale_);
                        a.q_block = qb, a.k_block = W_ > 256 ? (wide ? 32 : 128) : 0;
                        a.key_splits = splits;
                        return k::build_attention(a);
                    });
        add(attn, all_mask_,
            {va(a_.qf) + sg.row0 * QW, QW, va(a_.att) + sg.row0 * QW, QW, sg.rows, sg.pos0, heads,
             0},
            "attention");
    }
}

void DeepseekRuntime::add_mla(uint32_t il, const std::vector<Segment>& segs, uint32_t T)
{
    const DsLayer& L = layers_[il];
    const uint32_t H = c_.n_head, Dk = c_.head_dim_k, Dn = c_.head_dim_nope(), C = c_.kv_lora_rank;
    const uint64_t E4 = uint64_t{c_.n_embd} * 4, A4 = uint64_t{A_} * 4, Dk4 = uint64_t{Dk} * 4;
    const uint64_t x = va(a_.x), a = va(a_.a), q = va(a_.q);
    gemm(L.wa, T, x, E4, a, A4, "attn_q_a_kv_a", &L.attn_norm);
    gemm(L.wq_b, T, a, A4, q, H * Dk4, "attn_q_b", &L.q_a_norm);
    {
        k::RmsNormConfig r;
        r.cols = C, r.eps = c_.rms_eps;
        r.block_rows = std::clamp<uint32_t>(T, 1, r.rows_per_block());
        const k::Program& code = program(fmt::format("rms_norm c{} b{}", C, r.block_rows),
                                         [&] { return k::build_rms_norm(r); });
        const uint64_t c = a + uint64_t{c_.q_lora_rank} * 4;
        add(code, all_mask_, {c, A4, va(L.kv_a_norm.place), c, A4, T}, "attn_kv_a_norm");
    }
    rope(T * H, q + Dn * 4ull, Dk4, va(a_.qpos), "rope_q");
    rope(T, a + (A_ - c_.n_rot) * 4ull, A4, va(a_.pos), "rope_k");
    expert_gemm(L.k_abs, T * H, 1, false, q, Dk4, va(a_.hids), va(a_.qf), W_ * 4ull, "attn_k_b");
    add_attention(il, segs);
    expert_gemm(L.v_abs, T * H, 1, false, va(a_.att), W_ * 4ull, va(a_.hids), va(a_.o),
                c_.head_dim_v * 4ull, "attn_v_b");
    gemm(L.wo, T, va(a_.o), uint64_t{H} * c_.head_dim_v * 4, x, E4, "attn_output", nullptr, true);
}

void DeepseekRuntime::add_dense_ffn(uint32_t il, uint32_t T)
{
    const DsLayer& L = layers_[il];
    const uint64_t E4 = uint64_t{c_.n_embd} * 4, F4 = uint64_t{c_.n_ff} * 4;
    gemm(L.gate_up, T, va(a_.x), E4, va(a_.gu), 2 * F4, "ffn_gate_up", &L.ffn_norm);
    swiglu(T, c_.n_ff, va(a_.gu), va(a_.act), "swiglu");
    gemm(L.down, T, va(a_.act), F4, va(a_.x), E4, "ffn_down", nullptr, true);
}

void DeepseekRuntime::add_moe(uint32_t il, uint32_t T)
{
    const DsLayer& L = layers_[il];
    // K: pairs a token routes to this chip (all of them but for a tray's timing shape).
    const uint32_t K = k_local_, X = c_.n_expert, F = c_.n_ff_exp, Fs = shared_ff_;
    const uint64_t E4 = uint64_t{c_.n_embd} * 4, F4 = uint64_t{F} * 4, Fs4 = uint64_t{Fs} * 4;
    const uint64_t x = va(a_.x);
    gemm(L.router, T, x, E4, va(a_.rlog), X * 4ull, "router", &L.ffn_norm);
    k::MoeGroupRoutingConfig r;
    r.n_expert = X, r.k = c_.n_expert_used, r.n_group = c_.n_expert_groups,
    r.n_group_used = c_.n_group_used;
    r.norm = c_.expert_weights_norm;
    r.scale = c_.expert_weights_scale != 0 ? c_.expert_weights_scale : 1.0f;
    r.block_rows = std::clamp<uint32_t>(T, 1, r.rows_per_block());
    const k::Program& route = program(fmt::format("group_routing b{}", r.block_rows),
                                      [&] { return k::build_moe_group_routing(r); });
    const DsVec& bias = c_.has_expert_bias ? L.expert_bias : zero_bias_;
    add(route, all_mask_, {va(a_.rlog), X * 4ull, va(bias.place), va(a_.ids), va(a_.wts), T},
        "moe_routing");
    expert_gemm(L.gate_up_exps, T, K, false, x, E4, va(a_.ids), va(a_.gu), 2 * F4,
                "ffn_gate_up_exps", &L.ffn_norm);
    gemm(L.sh_gate_up, T, x, E4, va(a_.sgu), 2 * Fs4, "ffn_gate_up_shexp", &L.ffn_norm);
    swiglu(T * K, F, va(a_.gu), va(a_.act), "swiglu");
    swiglu(T, Fs, va(a_.sgu), va(a_.sact), "swiglu_shexp");
    expert_gemm(L.down_exps, T, K, true, va(a_.act), F4, va(a_.ids), va(a_.eo), E4,
                "ffn_down_exps");
    gemm(L.sh_down, T, va(a_.sact), Fs4, x, E4, "ffn_down_shexp", nullptr, true);
    k::MoeCombineConfig m;
    m.cols = c_.n_embd, m.k = K, m.residual = true;
    m.block_rows = std::clamp<uint32_t>(T, 1, m.rows_per_block());
    const k::Program& combine =
        program(fmt::format("combine c{} k{} b{}", c_.n_embd, K, m.block_rows),
                [&] { return k::build_moe_combine(m); });
    add(combine, all_mask_, {va(a_.eo), E4, va(a_.wts), x, E4, T}, "moe_combine");
}

std::vector<float> DeepseekRuntime::run(const std::vector<Segment>& segs,
                                        std::span<const int32_t> tokens,
                                        std::span<const int32_t> pos, uint32_t out_row0,
                                        uint32_t out_rows)
{
    add_pass(segs, tokens, pos, out_row0, out_rows);
    std::vector<float> logits(size_t{out_rows} * c_.n_vocab, 0.0f);
    if (!o_.timing_only) launch_->download(logits.data(), va(a_.logits), logits.size() * 4);
    last_ += run_batch();
    last_ += tray_exchange(o_, c_.n_layer, uint64_t{c_.n_embd} * 4,
                           static_cast<uint32_t>(tokens.size()), out_rows);
    return logits;
}

void DeepseekRuntime::add_pass(const std::vector<Segment>& segs, std::span<const int32_t> tokens,
                               std::span<const int32_t> pos, uint32_t out_row0, uint32_t out_rows)
{
    const uint32_t T = static_cast<uint32_t>(tokens.size()), H = c_.n_head;
    const uint64_t E4 = uint64_t{c_.n_embd} * 4;
    if (!o_.timing_only) {
        std::vector<int32_t> qpos(size_t{T} * H);
        for (size_t i = 0; i < qpos.size(); i++) qpos[i] = pos[i / H];
        launch_->upload(va(a_.tokens), tokens.data(), tokens.size() * 4);
        launch_->upload(va(a_.pos), pos.data(), pos.size() * 4);
        launch_->upload(va(a_.qpos), qpos.data(), qpos.size() * 4);
    }
    {
        lin::EmbeddingConfig e{T, c_.n_vocab, c_.n_embd, embd_dtype_};
        const k::Program& code =
            program(fmt::format("embd t{} v{} d{} w{}", T, e.vocab, e.dim, int(e.table)),
                    [&] { return lin::build_embedding(e); });
        add(code, all_mask_, {va(a_.tokens), va(embd_.place), embd_row_bytes_, va(a_.x), E4},
            "embedding");
    }
    for (uint32_t il = 0; il < c_.n_layer; il++) {
        add_mla(il, segs, T);
        if (c_.layer_is_dense(il))
            add_dense_ffn(il, T);
        else
            add_moe(il, T);
    }
    gemm(output_, out_rows, va(a_.x) + out_row0 * E4, E4, va(a_.logits), c_.n_vocab * 4ull,
         "output", &out_norm_);
    launch_->cut(segs.size() == T ? "decode step" : "prompt chunk");
}

ChipTotals DeepseekRuntime::run_batch()
{
    return batch_totals(launch_->run_batch(), by_kernel_);
}

}  // namespace jal::model::detail
