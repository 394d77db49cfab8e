// Where the DeepSeek-V3 runtime's weights go and how they are rearranged on the way
// (deepseek_runtime.hpp): the pe rows permuted for the NEOX rotation, q_a and kv_a fused,
// gate and up fused, and k_b / v_b widened into the absorbed attention's per-head matrices.
#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include <jal/kernels/library/linear.hpp>
#include <jal/kernels/library/rope.hpp>

#include "deepseek_runtime.hpp"
#include "runtime_common.hpp"

namespace jal::model::detail {

namespace lin = jal::kernels::linear;

namespace {

float half_to_float(uint16_t h)
{
    const uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 31, man = h & 1023;
    float v = exp == 0    ? std::ldexp(static_cast<float>(man), -24)
              : exp == 31 ? (man ? NAN : INFINITY)
                          : std::ldexp(static_cast<float>(man | 1024), static_cast<int>(exp) - 25);
    return sign ? -v : v;
}

// The elements of a tensor as F32 (F32, BF16, F16: the types k_b and v_b come in).
std::vector<float> as_f32(const GgufTensor& t)
{
    const size_t n = t.data.size() / (t.type == TensorType::F32 ? 4 : 2);
    std::vector<float> out(n);
    const std::byte* p = t.data.data();
    for (size_t i = 0; i < n; i++) {
        uint16_t h = 0;
        if (t.type != TensorType::F32) std::memcpy(&h, p + 2 * i, 2);
        if (t.type == TensorType::F32)
            std::memcpy(&out[i], p + 4 * i, 4);
        else if (t.type == TensorType::BF16)
            out[i] = std::bit_cast<float>(uint32_t{h} << 16);
        else if (t.type == TensorType::F16)
            out[i] = half_to_float(h);
        else
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("model runtime: '{}' is {}; the absorbed attention takes "
                                    "F32, BF16 or F16",
                                    t.name, tensor_type_name(t.type)));
    }
    return out;
}

// ggml's NORM rotation pairs (2i, 2i+1); the kernel's NEOX pairs (i, i + R/2). Row j of the
// permuted block is row src(j) of the file's.
uint32_t pair_to_half(uint32_t j, uint32_t R)
{
    return j < R / 2 ? 2 * j : 2 * (j - R / 2) + 1;
}

// rows [first, first + R) of a matrix of row_bytes rows, reordered by pair_to_half.
void permute_pe_rows(std::byte* m, uint64_t row_bytes, uint64_t first, uint32_t R)
{
    std::vector<std::byte> old(m + first * row_bytes, m + (first + R) * row_bytes);
    for (uint32_t j = 0; j < R; j++)
        std::memcpy(m + (first + j) * row_bytes, old.data() + pair_to_half(j, R) * row_bytes,
                    row_bytes);
}

}  // namespace

void deepseek_scales(const DeepseekConfig& c, double& kq_scale, double& rope_attn_factor)
{
    auto get_mscale = [](double s, double m) { return s <= 1 ? 1.0 : 0.1 * m * std::log(s) + 1; };
    const bool yarn = c.rope_scaling_type == "yarn" && c.rope_scaling_factor > 0;
    const double f = yarn ? c.rope_scaling_factor : 1.0;
    double attn = 1.0;
    if (yarn) {
        // get_mscale(f, m) / get_mscale(f, m_all) with m = m_all (the deepseek2 loader's
        // mscale_all_dim), so 1; without yarn_log_multiplier get_mscale(f, 1).
        attn = c.yarn_log_mul != 0 ? 1.0 : get_mscale(f, 1.0);
        attn /= 1.0 + 0.1 * std::log(f);
    }
    attn *= c.rope_attn_factor;
    rope_attn_factor = attn;
    const double attn_org = attn * (yarn ? 1.0 + 0.1 * std::log(f) : 1.0);
    const double mscale = attn_org * (1.0 + 0.1 * c.yarn_log_mul * std::log(f));
    kq_scale = mscale * mscale / std::sqrt(double(c.head_dim_k));
}

const GgufTensor* DeepseekRuntime::tensor(const std::string& name) const
{
    return file_ ? &file_->tensor(name) : nullptr;
}

const std::byte* DeepseekRuntime::keep(std::vector<std::byte>&& bytes)
{
    owned_.push_back(std::move(bytes));
    return owned_.back().data();
}

void DeepseekRuntime::plan_vec(DsVec& v, const std::byte* data, uint64_t bytes)
{
    v.bytes = bytes, v.data = data;
    v.place = placement_.reserve(Placement::kReplicated, bytes);
    vec_uploads_.push_back({v.place, &v});
}

void DeepseekRuntime::plan_vec(DsVec& v, const std::string& name, uint64_t bytes)
{
    const GgufTensor* t = tensor(name);
    if (t && t->data.size() != bytes)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: tensor '{}' has {} bytes, expected {} (F32)", name,
                                t->data.size(), bytes));
    plan_vec(v, t ? t->data.data() : nullptr, bytes);
}

void DeepseekRuntime::plan_matrix(DsMatrix& m, const std::byte* data, uint32_t n, uint32_t kdim,
                                  uint32_t experts, jal_dtype dtype)
{
    m.n = n, m.kdim = kdim, m.experts = experts, m.dtype = dtype, m.data = data;
    m.row_bytes = lin::packed_row_bytes(dtype, kdim);
    const uint32_t units = experts ? experts : n;
    const uint64_t unit_bytes = experts ? m.row_bytes * n : m.row_bytes;
    for (uint32_t s = 0; s < S_; s++) {
        const lin::Range r = lin::slice_range(units, S_, s);
        m.first_row.push_back(r.begin);
        m.shards.push_back(r.size() ? placement_.reserve(static_cast<int>(s), r.size() * unit_bytes)
                                    : Place{});
    }
    m.table = placement_.reserve(Placement::kReplicated, 8ull * S_);
}

DsMatrix DeepseekRuntime::fused(const std::vector<std::string>& names, uint32_t n, uint32_t kdim,
                                uint32_t experts, jal_dtype timing_dtype)
{
    DsMatrix m;
    jal_dtype dt = timing_dtype;
    const std::byte* data = nullptr;
    if (file_) {
        dt = chip_dtype(file_->tensor(names[0]).type, names[0]);
        std::vector<std::byte> all;
        for (const std::string& nm : names) {
            const GgufTensor& t = file_->tensor(nm);
            if (chip_dtype(t.type, nm) != dt)
                throw Error(JAL_STATUS_INVALID_FIELD,
                            fmt::format("model runtime: '{}' and '{}' differ in type; the "
                                        "runtime fuses them",
                                        names[0], nm));
            all.insert(all.end(), t.data.begin(), t.data.end());
        }
        const uint64_t want = lin::packed_row_bytes(dt, kdim) * n * std::max<uint32_t>(experts, 1);
        if (all.size() != want)
            throw Error(JAL_STATUS_INVALID_FIELD,
                        fmt::format("model runtime: '{}' has {} bytes, expected {}", names[0],
                                    all.size(), want));
        data = keep(std::move(all));
    }
    plan_matrix(m, data, n, kdim, experts, dt);
    return m;
}

DsMatrix DeepseekRuntime::matrix(const std::string& name, uint32_t n, uint32_t kdim,
                                 uint32_t experts, jal_dtype timing_dtype)
{
    return fused({name}, n, kdim, experts, timing_dtype);
}

void DeepseekRuntime::plan_weights()
{
    const uint64_t E4 = uint64_t{c_.n_embd} * 4;
    const GgufTensor* t = tensor("token_embd.weight");
    embd_dtype_ = t ? chip_dtype(t->type, t->name) : JAL_DT_BF16;
    embd_row_bytes_ = lin::packed_row_bytes(embd_dtype_, c_.n_embd);
    embd_.bytes = embd_row_bytes_ * c_.n_vocab;
    embd_.data = t ? t->data.data() : nullptr;
    embd_.place = placement_.reserve(Placement::kInterleaved, embd_.bytes);
    vec_uploads_.push_back({embd_.place, &embd_});
    layers_.resize(c_.n_layer);
    for (uint32_t il = 0; il < c_.n_layer; il++) plan_layer(layers_[il], il);
    plan_vec(out_norm_, "output_norm.weight", E4);
    output_ = matrix(c_.tied_output ? "token_embd.weight" : "output.weight", c_.n_vocab, c_.n_embd,
                     0, JAL_DT_BF16);
    std::vector<std::byte> zeros(uint64_t{std::max<uint32_t>(c_.n_expert, 1)} * 4);
    plan_vec(zero_bias_, keep(std::move(zeros)), uint64_t{std::max<uint32_t>(c_.n_expert, 1)} * 4);
    plan_rope_tables();
    for (DsLayer& L : layers_)
        for (DsMatrix* m : {&L.wa, &L.wq_b, &L.k_abs, &L.v_abs, &L.wo, &L.gate_up, &L.down,
                            &L.router, &L.gate_up_exps, &L.down_exps, &L.sh_gate_up, &L.sh_down})
            if (m->n) matrices_.push_back(m);
    matrices_.push_back(&output_);
    weight_bytes_ = placement_.bytes_reserved();
}

void DeepseekRuntime::plan_layer(DsLayer& L, uint32_t il)
{
    const uint64_t E4 = uint64_t{c_.n_embd} * 4;
    auto n = [&](const char* s) { return fmt::format("blk.{}.{}", il, s); };
    plan_vec(L.attn_norm, n("attn_norm.weight"), E4);
    plan_vec(L.q_a_norm, n("attn_q_a_norm.weight"), c_.q_lora_rank * 4ull);
    plan_vec(L.kv_a_norm, n("attn_kv_a_norm.weight"), c_.kv_lora_rank * 4ull);
    plan_vec(L.ffn_norm, n("ffn_norm.weight"), E4);
    plan_attention(L, il);
    plan_ffn(L, il);
}

// q_a | kv_a as one GEMM (the pe rows of kv_a as halves), q_b with each head's pe rows as
// halves, the output projection, and the absorbed k_b and v_b.
void DeepseekRuntime::plan_attention(DsLayer& L, uint32_t il)
{
    auto n = [&](const char* s) { return fmt::format("blk.{}.{}", il, s); };
    const uint32_t R = c_.n_rot, Dk = c_.head_dim_k, Dn = c_.head_dim_nope();
    L.wa = fused({n("attn_q_a.weight"), n("attn_kv_a_mqa.weight")}, A_, c_.n_embd, 0, JAL_DT_BF16);
    L.wq_b = matrix(n("attn_q_b.weight"), c_.n_head * Dk, c_.q_lora_rank, 0, JAL_DT_BF16);
    if (file_) {
        permute_pe_rows(const_cast<std::byte*>(L.wa.data), L.wa.row_bytes, A_ - R, R);
        std::vector<std::byte> qb(L.wq_b.data, L.wq_b.data + L.wq_b.row_bytes * L.wq_b.n);
        for (uint32_t h = 0; h < c_.n_head; h++)
            permute_pe_rows(qb.data(), L.wq_b.row_bytes, uint64_t{h} * Dk + Dn, R);
        L.wq_b.data = keep(std::move(qb));
    }
    L.wo = matrix(n("attn_output.weight"), c_.n_embd, c_.n_head * c_.head_dim_v, 0, JAL_DT_BF16);
    plan_absorbed(L, il);
}

// Per head h: k_abs[h] = [[K_b[h], 0], [0, I_R]] ((C + R) rows of Dk) and v_abs[h] =
// [V_b[h], 0] (Dv rows of C + R), F32 (BF16 in timing-only shapes, the published bytes).
void DeepseekRuntime::plan_absorbed(DsLayer& L, uint32_t il)
{
    const uint32_t H = c_.n_head, C = c_.kv_lora_rank, R = c_.n_rot, Dk = c_.head_dim_k,
                   Dn = c_.head_dim_nope(), Dv = c_.head_dim_v;
    const jal_dtype dt = file_ ? JAL_DT_F32 : JAL_DT_BF16;
    const std::byte* kd = nullptr;
    const std::byte* vd = nullptr;
    if (file_) {
        const std::vector<float> kb =
            as_f32(file_->tensor(fmt::format("blk.{}.attn_k_b.weight", il)));
        const std::vector<float> vb =
            as_f32(file_->tensor(fmt::format("blk.{}.attn_v_b.weight", il)));
        std::vector<float> k(size_t{H} * W_ * Dk, 0.0f), v(size_t{H} * Dv * W_, 0.0f);
        for (uint32_t h = 0; h < H; h++) {
            float* kh = k.data() + size_t{h} * W_ * Dk;
            for (uint32_t r = 0; r < C; r++)
                std::memcpy(kh + size_t{r} * Dk, kb.data() + (size_t{h} * C + r) * Dn, Dn * 4);
            for (uint32_t i = 0; i < R; i++) kh[size_t{C + i} * Dk + Dn + i] = 1.0f;
            for (uint32_t r = 0; r < Dv; r++)
                std::memcpy(v.data() + (size_t{h} * Dv + r) * W_,
                            vb.data() + (size_t{h} * Dv + r) * C, C * 4);
        }
        auto bytes = [&](const std::vector<float>& f) {
            std::vector<std::byte> b(f.size() * 4);
            std::memcpy(b.data(), f.data(), b.size());
            return keep(std::move(b));
        };
        kd = bytes(k), vd = bytes(v);
    }
    plan_matrix(L.k_abs, kd, W_, Dk, H, dt);
    plan_matrix(L.v_abs, vd, Dv, W_, H, dt);
}

// Dense layers: gate | up fused, down. MoE layers: router, bias, routed experts (each
// expert's gate rows then its up rows), the shared expert's gate | up and down.
void DeepseekRuntime::plan_ffn(DsLayer& L, uint32_t il)
{
    auto n = [&](const char* s) { return fmt::format("blk.{}.{}", il, s); };
    const uint32_t E = c_.n_embd;
    if (c_.layer_is_dense(il)) {
        L.gate_up =
            fused({n("ffn_gate.weight"), n("ffn_up.weight")}, 2 * c_.n_ff, E, 0, JAL_DT_BF16);
        L.down = matrix(n("ffn_down.weight"), E, c_.n_ff, 0, JAL_DT_BF16);
        return;
    }
    const uint32_t X = c_.n_expert, F = c_.n_ff_exp, Fs = shared_ff_;
    L.router = matrix(n("ffn_gate_inp.weight"), X, E, 0, JAL_DT_BF16);
    if (c_.has_expert_bias) plan_vec(L.expert_bias, n("exp_probs_b.bias"), X * 4ull);
    L.sh_gate_up =
        fused({n("ffn_gate_shexp.weight"), n("ffn_up_shexp.weight")}, 2 * Fs, E, 0, JAL_DT_BF16);
    L.sh_down = matrix(n("ffn_down_shexp.weight"), E, Fs, 0, JAL_DT_BF16);
    // Each expert's gate rows then its up rows: one expert of 2F rows. Timing only, one chip
    // of tray_chips holds its share of the experts.
    const uint32_t Xl = local_experts();
    L.gate_up_exps =
        fused({n("ffn_gate_exps.weight"), n("ffn_up_exps.weight")}, 2 * F, E, Xl, JAL_DT_MXFP4);
    if (file_) {
        const uint64_t part = L.gate_up_exps.row_bytes * F;
        std::vector<std::byte> il_(L.gate_up_exps.row_bytes * 2 * F * X);
        const std::byte* g = L.gate_up_exps.data;
        const std::byte* u = g + part * X;
        for (uint32_t e = 0; e < X; e++) {
            std::memcpy(il_.data() + 2 * e * part, g + e * part, part);
            std::memcpy(il_.data() + (2 * e + 1) * part, u + e * part, part);
        }
        L.gate_up_exps.data = keep(std::move(il_));
    }
    L.down_exps = matrix(n("ffn_down_exps.weight"), E, F, Xl, JAL_DT_MXFP4);
}

void DeepseekRuntime::plan_rope_tables()
{
    kernels::YarnParams y;
    y.head_dim = c_.n_rot;
    y.freq_base = c_.rope_freq_base;
    const bool yarn = c_.rope_scaling_type == "yarn" && c_.rope_scaling_factor > 0;
    const bool scaled = c_.rope_scaling_type != "none" && c_.rope_scaling_factor > 0;
    y.factor = scaled ? c_.rope_scaling_factor : 1.0;
    y.ext_factor = yarn ? 1.0 : 0.0;
    y.n_ctx_orig = c_.rope_orig_ctx ? c_.rope_orig_ctx : c_.n_ctx_train;
    y.beta_fast = c_.yarn_beta_fast;
    y.beta_slow = c_.yarn_beta_slow;
    y.attn_factor = rope_attn_;
    kernels::RopeTables rt = kernels::rope_yarn_tables(y, o_.n_ctx);
    cos_ = std::move(rt.cos);
    sin_ = std::move(rt.sin);
    plan_vec(rope_cos_, reinterpret_cast<const std::byte*>(cos_.data()), cos_.size() * 4);
    plan_vec(rope_sin_, reinterpret_cast<const std::byte*>(sin_.data()), sin_.size() * 4);
}

}  // namespace jal::model::detail
