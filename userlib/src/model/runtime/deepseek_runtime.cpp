// The DeepSeek-V3 runtime's construction, caches, activations and sequences
// (deepseek_runtime.hpp; the graph is in deepseek_graph.cpp, the weights in
// deepseek_weights.cpp).
#include <algorithm>

#include <fmt/format.h>

#include <jal/hw/chip.h>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/linear.hpp>

#include "deepseek_runtime.hpp"
#include "expert_split.hpp"
#include "runtime_common.hpp"
#include "sequence_slots.hpp"
#include "upload.hpp"

namespace jal::model::detail {

namespace lin = jal::kernels::linear;

namespace {

// What the runtime takes of the architecture (docs/deepseek.md §5): refused by name.
void check_supported(const DeepseekConfig& c)
{
    auto refuse = [](const char* what) {
        throw Error(
            JAL_STATUS_INVALID_FIELD,
            fmt::format("model runtime: deepseek2 {} is not supported on the chip yet", what));
    };
    if (c.q_lora_rank == 0) refuse("without a q LoRA (q_lora_rank 0, the lite models)");
    if (c.n_layer > c.n_layer_dense_lead && c.gating != ExpertGating::sigmoid)
        refuse("with softmax gating (DeepSeek V2)");
    if (c.n_rot % 2 || c.n_rot == 0) refuse("with an odd or zero RoPE width");
}

void check_options(const DeepseekConfig& c, const RuntimeOptions& o)
{
    if (o.tray_chips == 1) return;
    if (!o.timing_only)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "model runtime: tray_chips (the experts split over chips) needs timing_only");
    const uint32_t n = o.tray_chips;
    if (n == 0 || c.n_expert % n || c.n_head % n || c.n_ff % n ||
        c.n_ff_exp * c.n_expert_shared % n)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: {} experts, {} heads, FFN widths {} and {} do not "
                                "split over {} chips",
                                c.n_expert, c.n_head, c.n_ff, c.n_ff_exp * c.n_expert_shared, n));
}

GptOssConfig summary_of(const DeepseekConfig& c)
{
    GptOssConfig s;
    s.n_layer = c.n_layer, s.n_ctx_train = c.n_ctx_train, s.n_embd = c.n_embd, s.n_ff = c.n_ff;
    s.n_head = c.n_head, s.n_head_kv = 1, s.head_dim = c.kv_lora_rank + c.n_rot;
    s.head_dim_v = c.kv_lora_rank, s.n_rot = c.n_rot;
    s.n_expert = c.n_expert, s.n_expert_used = c.n_expert_used, s.n_ff_exp = c.n_ff_exp;
    s.n_vocab = c.n_vocab, s.rms_eps = c.rms_eps, s.rope_freq_base = c.rope_freq_base;
    s.rope_scaling_type = c.rope_scaling_type, s.rope_scaling_factor = c.rope_scaling_factor;
    s.rope_orig_ctx = c.rope_orig_ctx, s.expert_weights_scale = c.expert_weights_scale;
    s.tokenizer_model = c.tokenizer_model;
    return s;
}

}  // namespace

DeepseekRuntime::DeepseekRuntime(std::optional<GgufFile> file, const DeepseekConfig& config,
                                 const runtime::Device& device, const RuntimeOptions& options)
    : file_(std::move(file)), c_(config), summary_(summary_of(config)), o_(options),
      device_(device), context_(device), placement_(1)
{
    check_supported(c_);
    check_options(c_, o_);
    shard_for_tray();
    const jal_identify id = device.identify();
    const uint32_t usable = std::max<uint32_t>(1, id.slices_enabled);
    S_ = o_.slices ? o_.slices : (o_.timing_only ? usable : std::min<uint32_t>(8, usable));
    if (S_ > usable || S_ > 64)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: {} slices asked for, {} usable", S_, usable));
    all_mask_ = (S_ >= 64 ? ~0ull : (1ull << S_) - 1);
    placement_ = Placement(S_);
    if (!o_.n_ctx) o_.n_ctx = std::min<uint32_t>(c_.n_ctx_train ? c_.n_ctx_train : 4096, 4096);
    T_ = std::max(o_.max_batch_tokens, o_.max_sequences);
    W_ = c_.kv_lora_rank + c_.n_rot;
    kv_dtype_ = o_.kv_type == KvType::f16 ? JAL_DT_F16 : JAL_DT_F32;
    kv_bytes_ = o_.kv_type == KvType::f16 ? 2 : 4;
    A_ = c_.q_lora_rank + W_;
    deepseek_scales(c_, kq_scale_, rope_attn_);
    plan_weights();
    plan_caches();
    plan_activations();
    plan_expert_rows();
    placement_.allocate(context_);
    queue_ = std::make_unique<runtime::Queue>(context_, 16384);
    kernels::LauncherOptions lo;
    lo.args = {JAL_PLACE_REPLICATED, all_mask_};
    lo.stages = o_.staged;
    launch_ = std::make_unique<kernels::Launcher>(device_, context_, *queue_, lo);
    upload_tables();
    run_batch();
    if (!o_.timing_only) upload_weights();
}

// Slot j's cache of every layer, interleaved over the slices (every slice reads it, split by
// keys or by queries): K (n_ctx × W) then Vᵀ (W × n_ctx), F32 or F16 (o_.kv_type). Not in
// the arena of the slice that appends it: all 64 slices reading one slice's HBM would draw
// 64 × 60 GB/s from its 240.
void DeepseekRuntime::plan_caches()
{
    const uint64_t bytes = 2ull * o_.n_ctx * W_ * kv_bytes_;
    slots_.resize(o_.max_sequences);
    for (uint32_t j = 0; j < o_.max_sequences; j++)
        for (uint32_t il = 0; il < c_.n_layer; il++) {
            slots_[j].cache.push_back(placement_.reserve(Placement::kInterleaved, bytes));
            slots_[j].heads.push_back(placement_.reserve(Placement::kReplicated, 16));
        }
}

void DeepseekRuntime::plan_activations()
{
    const int R = Placement::kReplicated, I = Placement::kInterleaved;
    const uint64_t T = T_, H = c_.n_head, K = std::max<uint32_t>(c_.n_expert_used, 1);
    const uint64_t Kl = std::max<uint32_t>(k_local_, 1);
    const uint64_t E4 = uint64_t{c_.n_embd} * 4, F = std::max(K * c_.n_ff_exp, uint64_t{c_.n_ff});
    const uint64_t Fs = shared_ff_;
    a_.x = placement_.reserve(I, T * E4);
    a_.a = placement_.reserve(I, T * A_ * 4);
    a_.q = placement_.reserve(I, T * H * c_.head_dim_k * 4);
    a_.qf = placement_.reserve(I, T * H * W_ * 4);
    a_.att = placement_.reserve(I, T * H * W_ * 4);
    a_.o = placement_.reserve(I, T * H * c_.head_dim_v * 4);
    a_.rlog = placement_.reserve(I, T * std::max<uint32_t>(c_.n_expert, 1) * 4);
    a_.ids = placement_.reserve(R, T * K * 4);
    a_.wts = placement_.reserve(I, T * K * 4);
    a_.gu = placement_.reserve(I, T * F * 2 * 4);
    a_.act = placement_.reserve(I, T * F * 4);
    a_.sgu = placement_.reserve(I, T * std::max<uint64_t>(Fs, 1) * 2 * 4);
    a_.sact = placement_.reserve(I, T * std::max<uint64_t>(Fs, 1) * 4);
    a_.eo = placement_.reserve(I, T * Kl * E4);
    a_.logits = placement_.reserve(I, T * c_.n_vocab * 4);
    a_.tokens = placement_.reserve(R, T * 4);
    a_.pos = placement_.reserve(R, T * 4);
    a_.qpos = placement_.reserve(R, T * H * 4);
    a_.hids = placement_.reserve(R, T * H * 4);
}

// Shard tables, KV head tables and the head ids of the absorbed-attention expert GEMMs
// (addresses and structure, written even in timing-only mode); timing only, the modelled
// (uniform) expert ids.
void DeepseekRuntime::upload_tables()
{
    for (DsMatrix* m : matrices_) {
        std::vector<uint64_t> table(S_, 0);
        for (uint32_t s = 0; s < S_; s++) table[s] = m->shards[s].bytes ? va(m->shards[s]) : 0;
        launch_->upload(va(m->table), table.data(), table.size() * 8);
        if (m->row_shards.empty()) continue;
        for (uint32_t s = 0; s < S_; s++)
            table[s] = m->row_shards[s].bytes ? va(m->row_shards[s]) : 0;
        launch_->upload(va(m->row_table), table.data(), table.size() * 8);
    }
    for (Slot& sl : slots_)
        for (uint32_t il = 0; il < c_.n_layer; il++) {
            const uint64_t k = va(sl.cache[il]);
            const uint64_t table[2] = {k, k + uint64_t{o_.n_ctx} * W_ * kv_bytes_};
            launch_->upload(va(sl.heads[il]), table, sizeof table);
        }
    std::vector<int32_t> hids(size_t{T_} * c_.n_head);
    for (size_t i = 0; i < hids.size(); i++) hids[i] = static_cast<int32_t>(i % c_.n_head);
    launch_->upload(va(a_.hids), hids.data(), hids.size() * 4);
    if (!o_.timing_only || c_.n_expert == 0) return;
    std::vector<int32_t> ids(size_t{T_} * k_local_);
    for (size_t i = 0; i < ids.size(); i++)
        ids[i] = static_cast<int32_t>(lin::uniform_expert(local_experts(), k_local_,
                                                          static_cast<uint32_t>(i / k_local_),
                                                          static_cast<uint32_t>(i % k_local_)));
    launch_->upload(va(a_.ids), ids.data(), ids.size() * 4);
}

void DeepseekRuntime::upload_weights()
{
    std::vector<UploadPiece> pieces;
    for (auto& [place, v] : vec_uploads_)
        if (v->data) pieces.push_back({va(place), v->data, v->bytes});
    for (DsMatrix* m : matrices_) {
        const uint64_t unit = m->experts ? m->row_bytes * m->n : m->row_bytes;
        for (uint32_t s = 0; s < S_; s++)
            if (m->shards[s].bytes && m->data)
                pieces.push_back(
                    {va(m->shards[s]), m->data + m->first_row[s] * unit, m->shards[s].bytes});
        for (uint32_t s = 0; s < m->row_shards.size() && m->data; s++) {
            const lin::Range r = lin::slice_range(m->n, S_, s);
            for (uint32_t e = 0; e < m->experts && r.size(); e++)
                pieces.push_back({va(m->row_shards[s]) + uint64_t{e} * r.size() * m->row_bytes,
                                  m->data + (uint64_t{e} * m->n + r.begin) * m->row_bytes,
                                  r.size() * m->row_bytes});
        }
    }
    upload_pieces(device_, *queue_, pieces, o_.progress);
}

// One chip's share of a tray (RuntimeOptions::tray_chips): its heads, dense and shared FFN
// columns, vocabulary rows and experts; each token's pairs spread evenly over the chips.
void DeepseekRuntime::shard_for_tray()
{
    const uint32_t n = std::max<uint32_t>(o_.tray_chips, 1);
    shared_ff_ = c_.n_ff_exp * c_.n_expert_shared / n;
    k_local_ = std::max<uint32_t>(1, c_.n_expert_used / n);
    c_.n_head /= n;
    c_.n_ff /= n;
    c_.n_vocab = (c_.n_vocab + n - 1) / n;
}

uint32_t DeepseekRuntime::local_experts() const
{
    return c_.n_expert / std::max<uint32_t>(o_.tray_chips, 1);
}

// The routed experts' second layout, split by rows, as the GPT-OSS runtime keeps it
// (RuntimeOptions::expert_layout; automatic: only if no slice then passes 90 % of its HBM).
void DeepseekRuntime::plan_expert_rows()
{
    if (o_.expert_layout == ExpertLayout::experts) return;
    std::vector<DsMatrix*> ms;
    for (DsLayer& L : layers_)
        if (L.gate_up_exps.n) ms.insert(ms.end(), {&L.gate_up_exps, &L.down_exps});
    auto shard_bytes = [&](const DsMatrix& m, uint32_t s) {
        return uint64_t{m.experts} * lin::slice_range(m.n, S_, s).size() * m.row_bytes;
    };
    constexpr uint64_t kSliceBytes = JAL_HBM_TOTAL_BYTES / JAL_NUM_SLICES;
    if (o_.expert_layout == ExpertLayout::automatic)
        for (uint32_t s = 0; s < S_; s++) {
            uint64_t extra = 0;
            for (const DsMatrix* m : ms) extra += shard_bytes(*m, s);
            if (placement_.slice_load(s) + extra > kSliceBytes / 10 * 9) return;
        }
    for (DsMatrix* m : ms) {
        for (uint32_t s = 0; s < S_; s++) {
            const uint64_t bytes = shard_bytes(*m, s);
            m->row_shards.push_back(bytes ? placement_.reserve(static_cast<int>(s), bytes)
                                          : Place{});
        }
        m->row_table = placement_.reserve(Placement::kReplicated, 8ull * S_);
    }
}

const DeepseekRuntime::Slot& DeepseekRuntime::slot(int seq) const
{
    return used_slot(slots_, seq);
}

int DeepseekRuntime::create_sequence()
{
    return claim_slot(slots_);
}

void DeepseekRuntime::free_sequence(int seq)
{
    slot(seq).used = false;
}

void DeepseekRuntime::assume_length(int seq, uint32_t len)
{
    if (!o_.timing_only)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "model runtime: assume_length is for timing-only runs");
    if (len > o_.n_ctx)
        throw Error(JAL_STATUS_OUT_OF_RANGE,
                    fmt::format("model runtime: {} positions, the cache holds {}", len, o_.n_ctx));
    slot(seq).len = len;
}

void DeepseekRuntime::check_tokens(std::span<const int32_t> tokens) const
{
    for (int32_t t : tokens)
        if (t < 0 || static_cast<uint32_t>(t) >= c_.n_vocab)
            throw Error(JAL_STATUS_OUT_OF_RANGE,
                        fmt::format("model runtime: token {} is not in the vocabulary (0..{})", t,
                                    c_.n_vocab - 1));
}

std::vector<float> DeepseekRuntime::prefill(int seq, std::span<const int32_t> tokens)
{
    Slot& s = slot(seq);
    check_prompt(seq, s.len, tokens, o_.n_ctx, c_.n_vocab);
    last_ = {};
    by_kernel_.clear();
    std::vector<float> logits =
        run_prompt_chunks(tokens, o_.max_batch_tokens, s.len,
                          [&](std::span<const int32_t> chunk, std::span<const int32_t> pos) {
                              const uint32_t n = static_cast<uint32_t>(chunk.size());
                              return run({{seq, 0, n, s.len}}, chunk, pos, n - 1, 1);
                          });
    total_ += last_;
    return logits;
}

std::vector<std::vector<float>>
DeepseekRuntime::decode(std::span<const std::pair<int, int32_t>> batch)
{
    if (batch.empty()) return {};
    check_decode_step(batch.size(), T_);
    std::vector<Segment> segs;
    std::vector<int32_t> tokens, pos;
    for (auto [seq, tok] : batch)
        add_decode_row(segs, tokens, pos, seq, tok, slot(seq).len, o_.n_ctx);
    check_tokens(tokens);
    last_ = {};
    by_kernel_.clear();
    const uint32_t B = static_cast<uint32_t>(batch.size());
    const std::vector<float> logits = run(segs, tokens, pos, 0, B);
    for (auto [seq, tok] : batch) slot(seq).len++;
    total_ += last_;
    return split_rows(logits, B, c_.n_vocab);
}

void DeepseekRuntime::prepare_decode(std::span<const int> seqs, bool)
{
    if (seqs.empty()) return;
    check_decode_step(seqs.size(), T_);
    std::vector<Segment> segs;
    std::vector<int32_t> tokens, pos;
    for (const int seq : seqs) add_decode_row(segs, tokens, pos, seq, 0, slot(seq).len, o_.n_ctx);
    add_pass(segs, tokens, pos, 0, static_cast<uint32_t>(seqs.size()));
    launch_->prepare_batch();
}

std::vector<std::vector<int32_t>>
DeepseekRuntime::decode_greedy(std::span<const std::pair<int, int32_t>> batch, uint32_t steps,
                               const std::function<void(std::span<const int32_t>)>& on_step)
{
    return greedy_on_host(*this, batch, steps, on_step, last_);
}

std::vector<std::vector<float>>
DeepseekRuntime::mixed_step(std::span<const std::pair<int, int32_t>> batch, int prompt_seq,
                            std::span<const int32_t> chunk)
{
    std::vector<std::vector<float>> out = decode(batch);
    const ChipTotals step = batch.empty() ? ChipTotals{} : last_;
    const std::map<std::string, ChipTotals> kernels = by_kernel_;
    out.push_back(prefill(prompt_seq, chunk));
    last_ += step;  // the call's figures: both passes (total_ has counted each)
    if (!batch.empty())
        for (const auto& [label, t] : kernels) by_kernel_[label] += t;
    return out;
}

std::vector<uint8_t> DeepseekRuntime::read_back_data_for_test(uint64_t max_bytes)
{
    std::vector<uint8_t> out = download_data(placement_, *launch_, max_bytes);
    run_batch();
    return out;
}

// Every dense weight once, the routed experts a step can select (expected distinct under
// uniform routing), each sequence's latent cache (C + R elements a position and layer).
uint64_t DeepseekRuntime::decode_min_bytes(uint32_t users, uint32_t context) const
{
    auto bytes = [](const DsMatrix& m) {
        return double(m.row_bytes) * m.n * std::max<uint32_t>(m.experts, 1);
    };
    double total = bytes(output_) + double(embd_row_bytes_) * users;
    const double distinct =
        c_.n_expert
            ? expected_active_experts({.tokens = users, .k = k_local_, .experts = local_experts()})
            : 0;
    for (const DsLayer& L : layers_) {
        for (const DsMatrix* m : {&L.wa, &L.wq_b, &L.k_abs, &L.v_abs, &L.wo, &L.gate_up, &L.down,
                                  &L.router, &L.sh_gate_up, &L.sh_down})
            if (m->n) total += bytes(*m);
        if (L.gate_up_exps.n)
            total += (bytes(L.gate_up_exps) + bytes(L.down_exps)) / local_experts() * distinct;
        total += double(users) * context * W_ * kv_bytes_;
    }
    return static_cast<uint64_t>(total);
}

}  // namespace jal::model::detail
