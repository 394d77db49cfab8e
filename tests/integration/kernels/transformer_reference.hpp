// Double-precision references of the transformer kernels that more than one test uses,
// written from the formulas (llama.cpp: ggml_rope_yarn_corr_dims in ggml.c; rope_yarn_ramp,
// rope_yarn and rotate_pairs in ggml-cpu/ops.cpp; the attention of llm_graph_context with
// ggml_soft_max_add_sinks and the sliding-window mask of llama-kv-cache), not from the
// kernels' code.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

namespace jal::test::ref {

// GPT-OSS: head_dim 64, theta 150000, YaRN factor 32 over an original context of 4096,
// beta_fast 32, beta_slow 1.
constexpr int kDims = 64;
constexpr double kBase = 150000, kFactor = 32, kCtxOrig = 4096, kBetaFast = 32, kBetaSlow = 1;

inline double corr_dim(double beta)
{
    return kDims * std::log(kCtxOrig / (beta * 2 * std::numbers::pi)) / (2 * std::log(kBase));
}

// The rotation of one head at position p, straight from the formulas.
inline void rope_head_ref(const float* x, double* y, int64_t p)
{
    const double low = std::max(0.0, std::floor(corr_dim(kBetaFast)));
    const double high = std::min(kDims - 1.0, std::ceil(corr_dim(kBetaSlow)));
    const double freq_scale = 1 / kFactor;
    const double mscale = 1 + 0.1 * std::log(kFactor);  // attn_factor 1 times YaRN's magnitude
    for (int i0 = 0; i0 < kDims; i0 += 2) {
        const double theta_extrap = p * std::pow(kBase, -double(i0) / kDims);
        const double theta_interp = freq_scale * theta_extrap;
        const double y_ramp = (i0 / 2 - low) / std::max(0.001, high - low);
        const double ramp_mix = 1 - std::min(1.0, std::max(0.0, y_ramp));
        const double theta = theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix;
        const double c = std::cos(theta) * mscale, s = std::sin(theta) * mscale;
        const int ic = i0 / 2;
        const double x0 = x[ic], x1 = x[ic + kDims / 2];
        y[ic] = x0 * c - x1 * s;
        y[ic + kDims / 2] = x0 * s + x1 * c;
    }
}

inline std::vector<double> rope_ref(const std::vector<float>& x, uint32_t rows, uint32_t heads,
                                    const std::vector<int32_t>& pos)
{
    std::vector<double> y(x.size());
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t h = 0; h < heads; h++) {
            const size_t off = (size_t{r} * heads + h) * kDims;
            rope_head_ref(x.data() + off, y.data() + off, pos[r]);
        }
    return y;
}

struct Shape {
    uint32_t n_head, n_head_kv, head_dim, window;
    bool sinks;
};

// q: rows x n_head*d at positions pos0..; k, v: every position 0..pos0+rows-1, n_head_kv*d.
template <typename E>  // float inputs, or double ones (after a reference RoPE)
std::vector<double> attention_ref(const Shape& s, const std::vector<E>& q, uint32_t rows,
                                  uint32_t pos0, const std::vector<E>& k, const std::vector<E>& v,
                                  const std::vector<float>& sinks)
{
    const uint32_t d = s.head_dim, r = s.n_head / s.n_head_kv;
    const double scale = 1.0 / std::sqrt(double(d));
    std::vector<double> out(size_t{rows} * s.n_head * d);
    for (uint32_t t = 0; t < rows; t++) {
        const uint32_t p = pos0 + t;
        for (uint32_t h = 0; h < s.n_head; h++) {
            const uint32_t g = h / r;
            const E* qh = q.data() + (size_t{t} * s.n_head + h) * d;
            std::vector<double> sc;
            std::vector<uint32_t> keys;
            for (uint32_t j = 0; j <= p; j++) {
                if (s.window && p - j >= s.window) continue;
                const E* kj = k.data() + (size_t{j} * s.n_head_kv + g) * d;
                double dot = 0;
                for (uint32_t c = 0; c < d; c++) dot += double(qh[c]) * kj[c];
                sc.push_back(dot * scale);
                keys.push_back(j);
            }
            double m = *std::max_element(sc.begin(), sc.end());
            if (s.sinks) m = std::max<double>(m, sinks[h]);
            double sum = s.sinks ? std::exp(sinks[h] - m) : 0.0;
            for (double x : sc) sum += std::exp(x - m);
            double* o = out.data() + (size_t{t} * s.n_head + h) * d;
            for (size_t i = 0; i < keys.size(); i++) {
                const double w = std::exp(sc[i] - m) / sum;
                const E* vj = v.data() + (size_t{keys[i]} * s.n_head_kv + g) * d;
                for (uint32_t c = 0; c < d; c++) o[c] += w * vj[c];
            }
        }
    }
    return out;
}

template <typename E>
std::vector<E> rows_of(const std::vector<E>& all, uint32_t first, uint32_t count, uint32_t cols)
{
    return {all.begin() + size_t{first} * cols, all.begin() + size_t{first + count} * cols};
}

}  // namespace jal::test::ref
