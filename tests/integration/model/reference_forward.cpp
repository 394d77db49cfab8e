#include "reference_forward.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

namespace jal::test {

ReferenceModel::ReferenceModel(const jal::model::GgufFile& file, bool ggml_numerics, bool half_kv)
    : file_(file), c_(jal::model::read_gpt_oss_config(file)), ggml_(ggml_numerics),
      half_kv_(half_kv)
{
    embd_ = load("token_embd.weight");
    out_ = load("output.weight");
    out_norm_ = vec("output_norm.weight");
    for (uint32_t il = 0; il < c_.n_layer; il++) {
        auto n = [&](const char* s) { return "blk." + std::to_string(il) + "." + s; };
        Layer L;
        L.attn_norm = vec(n("attn_norm.weight"));
        L.post_norm = vec(n("post_attention_norm.weight"));
        L.bq = vec(n("attn_q.bias"));
        L.bk = vec(n("attn_k.bias"));
        L.bv = vec(n("attn_v.bias"));
        L.bo = vec(n("attn_output.bias"));
        L.sinks = vec(n("attn_sinks.weight"));
        L.br = vec(n("ffn_gate_inp.bias"));
        L.bg = vec(n("ffn_gate_exps.bias"));
        L.bu = vec(n("ffn_up_exps.bias"));
        L.bd = vec(n("ffn_down_exps.bias"));
        L.wq = load(n("attn_q.weight"));
        L.wk = load(n("attn_k.weight"));
        L.wv = load(n("attn_v.weight"));
        L.wo = load(n("attn_output.weight"));
        L.wr = load(n("ffn_gate_inp.weight"));
        L.wg = load(n("ffn_gate_exps.weight"));
        L.wu = load(n("ffn_up_exps.weight"));
        L.wd = load(n("ffn_down_exps.weight"));
        layers_.push_back(std::move(L));
    }
}

ReferenceModel::Sequence ReferenceModel::new_sequence() const
{
    Sequence s;
    s.k.resize(c_.n_layer);
    s.v.resize(c_.n_layer);
    return s;
}

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

void add(std::vector<double>& a, const std::vector<double>& b, size_t offset = 0)
{
    for (size_t i = 0; i < a.size(); i++) a[i] += b[offset + i];
}

}  // namespace

void ReferenceModel::rope(double* h, uint32_t pos) const
{
    // YaRN as ggml computes it (ggml_rope_yarn_corr_dims, rope_yarn).
    const uint32_t D = c_.head_dim, half = D / 2;
    const bool yarn = c_.rope_scaling_type == "yarn" && c_.rope_scaling_factor > 0;
    const double base = c_.rope_freq_base, factor = yarn ? c_.rope_scaling_factor : 1.0;
    const double ext = yarn ? 1.0 : 0.0;
    const double n_orig = c_.rope_orig_ctx ? c_.rope_orig_ctx : c_.n_ctx_train;
    auto cd = [&](double beta) {
        return D * std::log(n_orig / (2 * M_PI * beta)) / (2 * std::log(base));
    };
    const double corr0 = std::max(0.0, std::floor(cd(c_.yarn_beta_fast)));
    const double corr1 = std::min(double(D - 1), std::ceil(cd(c_.yarn_beta_slow)));
    const double mscale = ext != 0 ? 1.0 + 0.1 * std::log(factor) : 1.0;
    for (uint32_t i = 0; i < half; i++) {
        const double extrap = pos * std::pow(base, -2.0 * i / D);
        const double interp = extrap / factor;
        const double y = (i - corr0) / std::max(0.001, corr1 - corr0);
        const double ramp = (1 - std::clamp(y, 0.0, 1.0)) * ext;
        const double theta = interp * (1 - ramp) + extrap * ramp;
        const double cs = std::cos(theta) * mscale, sn = std::sin(theta) * mscale;
        const double a = h[i], b = h[i + half];
        h[i] = a * cs - b * sn;
        h[i + half] = a * sn + b * cs;
    }
}

std::vector<double> ReferenceModel::attention(uint32_t il, Sequence& seq,
                                              const std::vector<double>& h, uint32_t pos) const
{
    const uint32_t H = c_.n_head, G = c_.n_head_kv, D = c_.head_dim, KVD = G * D;
    const Layer& L = layers_[il];
    const double scale = 1.0 / std::sqrt(double(c_.n_rot ? c_.n_rot : D));
    std::vector<double> q = matvec(L.wq, h), k = matvec(L.wk, h), v = matvec(L.wv, h);
    add(q, L.bq), add(k, L.bk), add(v, L.bv);
    for (uint32_t hh = 0; hh < H; hh++) rope(q.data() + hh * D, pos);
    for (uint32_t g = 0; g < G; g++) rope(k.data() + g * D, pos);
    if (half_kv_)
        for (auto* kv : {&k, &v})
            for (double& x : *kv) x = double(static_cast<_Float16>(static_cast<float>(x)));
    seq.k[il].insert(seq.k[il].end(), k.begin(), k.end());
    seq.v[il].insert(seq.v[il].end(), v.begin(), v.end());
    const uint32_t window = c_.layer_uses_swa(il) ? c_.sliding_window : 0;
    std::vector<double> attn(size_t{H} * D, 0.0);
    for (uint32_t hh = 0; hh < H; hh++) {
        const uint32_t g = hh / (H / G);
        const double sink = L.sinks[hh];
        std::vector<double> s(pos + 1, -INFINITY);
        double m = sink;
        for (uint32_t j = 0; j <= pos; j++) {
            if (window && pos - j >= window) continue;
            double dot = 0;
            for (uint32_t d = 0; d < D; d++)
                dot += q[hh * D + d] * seq.k[il][size_t{j} * KVD + g * D + d];
            s[j] = dot * scale;
            m = std::max(m, s[j]);
        }
        double sum = std::exp(sink - m);
        for (uint32_t j = 0; j <= pos; j++)
            if (s[j] != -INFINITY) {
                const double p = std::exp(s[j] - m);
                sum += p;
                for (uint32_t d = 0; d < D; d++)
                    attn[hh * D + d] += p * seq.v[il][size_t{j} * KVD + g * D + d];
            }
        for (uint32_t d = 0; d < D; d++) attn[hh * D + d] /= sum;
    }
    std::vector<double> o = matvec(L.wo, attn);
    add(o, L.bo);
    return o;
}

std::vector<double> ReferenceModel::moe(const Layer& L, const std::vector<double>& h) const
{
    const uint32_t E = c_.n_embd, F = c_.n_ff_exp;
    std::vector<double> r = matvec(L.wr, h);
    add(r, L.br);
    // Top-k of the raw router logits (the lower id first on ties), softmax over them.
    std::vector<uint32_t> ids(c_.n_expert);
    std::iota(ids.begin(), ids.end(), 0u);
    std::stable_sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) { return r[a] > r[b]; });
    ids.resize(c_.n_expert_used);
    double mx = r[ids[0]], z = 0;
    std::vector<double> wts;
    for (uint32_t e : ids) wts.push_back(std::exp(r[e] - mx)), z += wts.back();
    std::vector<double> out(E, 0.0);
    for (size_t j = 0; j < ids.size(); j++) {
        const uint32_t e = ids[j];
        std::vector<double> gate = matvec(L.wg, h, e), up = matvec(L.wu, h, e);
        std::vector<double> act(F);
        for (uint32_t f = 0; f < F; f++) {
            const double g = std::min(gate[f] + L.bg[size_t{e} * F + f], 7.0);
            const double u = std::clamp(up[f] + L.bu[size_t{e} * F + f], -7.0, 7.0);
            act[f] = g / (1 + std::exp(-1.702 * g)) * (u + 1);
        }
        std::vector<double> down = matvec(L.wd, act, e);
        for (uint32_t c = 0; c < E; c++) out[c] += wts[j] / z * (down[c] + L.bd[size_t{e} * E + c]);
    }
    return out;
}

std::vector<double> ReferenceModel::forward(Sequence& seq, const std::vector<int32_t>& tokens) const
{
    const uint32_t E = c_.n_embd;
    std::vector<double> x;
    for (int32_t tok : tokens) {
        const uint32_t pos = seq.len++;
        x.assign(embd_.w.begin() + size_t(tok) * E, embd_.w.begin() + size_t(tok + 1) * E);
        for (uint32_t il = 0; il < c_.n_layer; il++) {
            add(x, attention(il, seq, rms_norm(x, layers_[il].attn_norm, c_.rms_eps), pos));
            add(x, moe(layers_[il], rms_norm(x, layers_[il].post_norm, c_.rms_eps)));
        }
    }
    std::vector<double> h = rms_norm(x, out_norm_, c_.rms_eps);
    return matvec(out_, h);
}

}  // namespace jal::test
