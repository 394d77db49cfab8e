#include "deepseek_forward.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace jal::test {

using jal::model::ExpertGating;

namespace {

std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& w, double eps)
{
    double ss = 0;
    for (double v : x) ss += v * v;
    const double r = 1.0 / std::sqrt(ss / x.size() + eps);
    std::vector<double> y(x.size());
    for (size_t i = 0; i < x.size(); i++) y[i] = x[i] * r * w[i];
    return y;
}

void add(std::vector<double>& a, const std::vector<double>& b)
{
    for (size_t i = 0; i < a.size(); i++) a[i] += b[i];
}

// llama_context's get_mscale (YaRN's magnitude correction).
double get_mscale(double scale, double mscale)
{
    return scale <= 1.0 ? 1.0 : 0.1 * mscale * std::log(scale) + 1.0;
}

// Indices sorted by descending value, the lower index first among equals.
std::vector<uint32_t> order_desc(const std::vector<double>& v)
{
    std::vector<uint32_t> ids(v.size());
    std::iota(ids.begin(), ids.end(), 0u);
    std::stable_sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return v[a] > v[b]; });
    return ids;
}

}  // namespace

DeepseekReference::DeepseekReference(const jal::model::GgufFile& file, bool ggml_numerics,
                                     bool expanded_mla, bool half_kv)
    : file_(file), c_(jal::model::read_deepseek_config(file)), ggml_(ggml_numerics),
      expanded_(expanded_mla), half_kv_(half_kv)
{
    // The RoPE and attention scales exactly as llama_context and the deepseek2 graph derive
    // them ([TAG_DEEPSEEK2_YARN_LOG_MUL_FIX]).
    const bool scaled = c_.rope_scaling_type != "none" && c_.rope_scaling_factor > 0;
    freq_scale_ = scaled ? 1.0 / c_.rope_scaling_factor : 1.0;
    ext_factor_ = c_.rope_scaling_type == "yarn" ? 1.0 : 0.0;
    const double factor = 1.0 / freq_scale_;
    double attn = 1.0;
    if (ext_factor_ != 0) {
        if (c_.yarn_log_mul != 0) {
            const double all = c_.yarn_log_mul, m = all != 1.0 ? all : 1.0;
            attn = get_mscale(factor, m) / get_mscale(factor, all);
        } else {
            attn = get_mscale(factor, 1.0);
        }
        attn /= 1.0 + 0.1 * std::log(factor);
    }
    attn *= c_.rope_attn_factor;
    rope_mscale_ = attn * (ext_factor_ != 0 ? 1.0 + 0.1 * std::log(factor) : 1.0);
    const double attn_org = attn * (1.0 + 0.1 * std::log(factor));
    const double mscale = attn_org * (1.0 + 0.1 * c_.yarn_log_mul * std::log(factor));
    kq_scale_ = mscale * mscale / std::sqrt(double(c_.head_dim_k));
    // ggml_rope_yarn_corr_dims over the n_rot rotated dimensions.
    const double R = c_.n_rot, base = c_.rope_freq_base;
    auto cd = [&](double beta) {
        return R * std::log(c_.rope_orig_ctx / (beta * 2 * M_PI)) / (2 * std::log(base));
    };
    corr_[0] = std::max(0.0, std::floor(cd(c_.yarn_beta_fast)));
    corr_[1] = std::min(R - 1, std::ceil(cd(c_.yarn_beta_slow)));

    embd_ = load_host_matrix(file, "token_embd.weight");
    out_ = c_.tied_output ? embd_ : load_host_matrix(file, "output.weight");
    out_norm_ = load_host_vector(file, "output_norm.weight");
    for (uint32_t il = 0; il < c_.n_layer; il++) layers_.push_back(load_layer(il));
}

DeepseekReference::Layer DeepseekReference::load_layer(uint32_t il) const
{
    auto n = [&](const char* s) { return "blk." + std::to_string(il) + "." + s; };
    auto m = [&](const char* s) { return load_host_matrix(file_, n(s)); };
    auto v = [&](const char* s) { return load_host_vector(file_, n(s)); };
    Layer L;
    L.attn_norm = v("attn_norm.weight");
    L.kv_a_norm = v("attn_kv_a_norm.weight");
    L.ffn_norm = v("ffn_norm.weight");
    if (c_.q_lora_rank > 0) {
        L.q_a_norm = v("attn_q_a_norm.weight");
        L.wq_a = m("attn_q_a.weight");
        L.wq_b = m("attn_q_b.weight");
    } else {
        L.wq = m("attn_q.weight");
    }
    L.wkv_a = m("attn_kv_a_mqa.weight");
    L.wk_b = m("attn_k_b.weight");
    L.wv_b = m("attn_v_b.weight");
    L.wo = m("attn_output.weight");
    if (c_.layer_is_dense(il)) {
        L.ffn_gate = m("ffn_gate.weight");
        L.ffn_up = m("ffn_up.weight");
        L.ffn_down = m("ffn_down.weight");
        return L;
    }
    L.router = m("ffn_gate_inp.weight");
    if (c_.has_expert_bias) L.expert_bias = v("exp_probs_b.bias");
    L.gate_exps = m("ffn_gate_exps.weight");
    L.up_exps = m("ffn_up_exps.weight");
    L.down_exps = m("ffn_down_exps.weight");
    L.gate_shexp = m("ffn_gate_shexp.weight");
    L.up_shexp = m("ffn_up_shexp.weight");
    L.down_shexp = m("ffn_down_shexp.weight");
    return L;
}

DeepseekReference::Sequence DeepseekReference::new_sequence() const
{
    Sequence s;
    s.kv.resize(c_.n_layer);
    return s;
}

void DeepseekReference::rope(double* x, uint32_t pos) const
{
    // ggml's GGML_ROPE_TYPE_NORM (consecutive pairs) with rope_yarn.
    const uint32_t R = c_.n_rot;
    for (uint32_t i = 0; i < R / 2; i++) {
        const double extrap = pos * std::pow(double(c_.rope_freq_base), -2.0 * i / R);
        const double interp = freq_scale_ * extrap;
        const double y = (i - corr_[0]) / std::max(0.001, corr_[1] - corr_[0]);
        const double ramp = (1 - std::clamp(y, 0.0, 1.0)) * ext_factor_;
        const double theta = interp * (1 - ramp) + extrap * ramp;
        const double cs = std::cos(theta) * rope_mscale_, sn = std::sin(theta) * rope_mscale_;
        const double a = x[2 * i], b = x[2 * i + 1];
        x[2 * i] = a * cs - b * sn;
        x[2 * i + 1] = a * sn + b * cs;
    }
}

namespace {

// Softmax of `s` in place.
void softmax(std::vector<double>& s)
{
    const double mx = *std::max_element(s.begin(), s.end());
    double sum = 0;
    for (double& v : s) sum += v = std::exp(v - mx);
    for (double& v : s) v /= sum;
}

}  // namespace

std::vector<double> DeepseekReference::head_absorbed(const Layer& L, uint32_t hh, const double* q,
                                                     const std::vector<double>& cache,
                                                     uint32_t n) const
{
    const uint32_t Dn = c_.head_dim_nope(), R = c_.n_rot, C = c_.kv_lora_rank, W = C + R;
    // The query's non-RoPE part taken into the latent space by k_b: [k_b·q_nope, q_pe].
    std::vector<double> qa = mv(L.wk_b, std::vector<double>(q, q + Dn), hh);
    qa.insert(qa.end(), q + Dn, q + Dn + R);
    std::vector<double> p(n);
    for (uint32_t j = 0; j < n; j++) {
        double dot = 0;
        for (uint32_t d = 0; d < W; d++) dot += qa[d] * cache[size_t{j} * W + d];
        p[j] = dot * kq_scale_;
    }
    softmax(p);
    std::vector<double> lat(C, 0.0);
    for (uint32_t j = 0; j < n; j++)
        for (uint32_t d = 0; d < C; d++) lat[d] += p[j] * cache[size_t{j} * W + d];
    return mv(L.wv_b, lat, hh);
}

std::vector<double> DeepseekReference::head_expanded(const Layer& L, uint32_t hh, const double* q,
                                                     const std::vector<double>& cache,
                                                     uint32_t n) const
{
    const uint32_t Dn = c_.head_dim_nope(), R = c_.n_rot, C = c_.kv_lora_rank, W = C + R;
    const double* kb = L.wk_b.w.data() + size_t{hh} * C * Dn;  // C rows of Dn: K_bᵀ maps c
    std::vector<double> p(n), out(c_.head_dim_v, 0.0);
    std::vector<std::vector<double>> v(n);
    for (uint32_t j = 0; j < n; j++) {
        const double* c = cache.data() + size_t{j} * W;
        double dot = 0;
        for (uint32_t d = 0; d < Dn; d++) {
            double k = 0;
            for (uint32_t r = 0; r < C; r++) k += kb[size_t{r} * Dn + d] * c[r];
            dot += q[d] * k;
        }
        for (uint32_t d = 0; d < R; d++) dot += q[Dn + d] * c[C + d];
        p[j] = dot * kq_scale_;
        v[j] = mv(L.wv_b, std::vector<double>(c, c + C), hh);
    }
    softmax(p);
    for (uint32_t j = 0; j < n; j++)
        for (size_t d = 0; d < out.size(); d++) out[d] += p[j] * v[j][d];
    return out;
}

std::vector<double> DeepseekReference::attention(uint32_t il, Sequence& seq,
                                                 const std::vector<double>& h, uint32_t pos) const
{
    const Layer& L = layers_[il];
    const uint32_t Dk = c_.head_dim_k, Dn = c_.head_dim_nope(), C = c_.kv_lora_rank;
    std::vector<double> q = c_.q_lora_rank > 0
                                ? mv(L.wq_b, rms_norm(mv(L.wq_a, h), L.q_a_norm, c_.rms_eps))
                                : mv(L.wq, h);
    const std::vector<double> kv = mv(L.wkv_a, h);
    std::vector<double> entry =
        rms_norm(std::vector<double>(kv.begin(), kv.begin() + C), L.kv_a_norm, c_.rms_eps);
    entry.insert(entry.end(), kv.begin() + C, kv.end());
    rope(entry.data() + C, pos);
    if (half_kv_)
        for (double& x : entry) x = double(static_cast<_Float16>(static_cast<float>(x)));
    std::vector<double>& cache = seq.kv[il];
    cache.insert(cache.end(), entry.begin(), entry.end());

    std::vector<double> heads;
    for (uint32_t hh = 0; hh < c_.n_head; hh++) {
        double* qh = q.data() + size_t{hh} * Dk;
        rope(qh + Dn, pos);
        const std::vector<double> o = expanded_ ? head_expanded(L, hh, qh, cache, pos + 1)
                                                : head_absorbed(L, hh, qh, cache, pos + 1);
        heads.insert(heads.end(), o.begin(), o.end());
    }
    return mv(L.wo, heads);
}

DeepseekReference::Route DeepseekReference::route(uint32_t il, const std::vector<double>& h) const
{
    const Layer& L = layers_[il];
    const uint32_t X = c_.n_expert;
    const std::vector<double> logits = mv(L.router, h);
    std::vector<double> probs(X);
    if (c_.gating == ExpertGating::sigmoid) {
        for (uint32_t e = 0; e < X; e++) probs[e] = 1.0 / (1.0 + std::exp(-logits[e]));
    } else {
        const double mx = *std::max_element(logits.begin(), logits.end());
        double z = 0;
        for (uint32_t e = 0; e < X; e++) z += probs[e] = std::exp(logits[e] - mx);
        for (double& p : probs) p /= z;
    }
    // The correction bias steers the selection only; the weights stay unbiased.
    std::vector<double> sel = probs;
    if (c_.has_expert_bias) add(sel, L.expert_bias);
    if (c_.grouped()) {
        const uint32_t G = c_.n_expert_groups, per = X / G;
        std::vector<double> group_score(G);
        for (uint32_t g = 0; g < G; g++) {
            std::vector<double> members(sel.begin() + g * per, sel.begin() + (g + 1) * per);
            const std::vector<uint32_t> best = order_desc(members);
            group_score[g] = members[best[0]] + members[best[1]];
        }
        const std::vector<uint32_t> groups = order_desc(group_score);
        for (uint32_t k = c_.n_group_used; k < G; k++)
            std::fill(sel.begin() + groups[k] * per, sel.begin() + (groups[k] + 1) * per,
                      -INFINITY);
    }
    Route r;
    const std::vector<uint32_t> ids = order_desc(sel);
    r.experts.assign(ids.begin(), ids.begin() + c_.n_expert_used);
    double sum = 0;
    for (uint32_t e : r.experts) sum += probs[e];
    for (uint32_t e : r.experts) {
        double w = probs[e];
        if (c_.expert_weights_norm) w /= std::max(sum, 6.103515625e-5);
        if (c_.expert_weights_scale != 0 && c_.expert_weights_scale != 1)
            w *= c_.expert_weights_scale;
        r.weights.push_back(w);
    }
    return r;
}

std::vector<double> DeepseekReference::swiglu(const HostMatrix& gate, const HostMatrix& up,
                                              const HostMatrix& down, const std::vector<double>& h,
                                              uint32_t slice) const
{
    std::vector<double> g = mv(gate, h, slice);
    const std::vector<double> u = mv(up, h, slice);
    for (size_t i = 0; i < g.size(); i++) g[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
    return mv(down, g, slice);
}

std::vector<double> DeepseekReference::moe(uint32_t il, const std::vector<double>& h) const
{
    const Layer& L = layers_[il];
    if (c_.layer_is_dense(il)) return swiglu(L.ffn_gate, L.ffn_up, L.ffn_down, h);
    const Route r = route(il, h);
    std::vector<double> out = swiglu(L.gate_shexp, L.up_shexp, L.down_shexp, h);
    for (size_t j = 0; j < r.experts.size(); j++) {
        const std::vector<double> y = swiglu(L.gate_exps, L.up_exps, L.down_exps, h, r.experts[j]);
        for (size_t i = 0; i < out.size(); i++) out[i] += r.weights[j] * y[i];
    }
    return out;
}

std::vector<double> DeepseekReference::forward(Sequence& seq,
                                               const std::vector<int32_t>& tokens) const
{
    const uint32_t E = c_.n_embd;
    std::vector<double> x;
    for (int32_t tok : tokens) {
        const uint32_t pos = seq.len++;
        x.assign(embd_.w.begin() + size_t(tok) * E, embd_.w.begin() + size_t(tok + 1) * E);
        for (uint32_t il = 0; il < c_.n_layer; il++) {
            add(x, attention(il, seq, rms_norm(x, layers_[il].attn_norm, c_.rms_eps), pos));
            add(x, moe(il, rms_norm(x, layers_[il].ffn_norm, c_.rms_eps)));
        }
    }
    return mv(out_, rms_norm(x, out_norm_, c_.rms_eps));
}

}  // namespace jal::test
