// rope_tables.cpp: YaRN cos/sin tables on the host, in double (rope.hpp has the formulas,
// taken from ggml's rope_yarn, rope_yarn_ramp and ggml_rope_yarn_corr_dims).
#include <jal/kernels/library/rope.hpp>

#include <algorithm>
#include <cmath>
#include <numbers>

#include <jal/error.hpp>

namespace jal::kernels {

namespace {

double corr_dim(const YarnParams& p, double beta)
{
    return p.head_dim * std::log(p.n_ctx_orig / (beta * 2 * std::numbers::pi)) /
           (2 * std::log(p.freq_base));
}

}  // namespace

void yarn_corr_dims(const YarnParams& p, double dims[2])
{
    // llama.cpp rounds the correction range to whole dimensions (Hugging Face does not).
    dims[0] = std::max(0.0, std::floor(corr_dim(p, p.beta_fast)));
    dims[1] = std::min(static_cast<double>(p.head_dim) - 1, std::ceil(corr_dim(p, p.beta_slow)));
}

RopeTables rope_yarn_tables(const YarnParams& p, uint32_t n_positions)
{
    if (p.head_dim == 0 || p.head_dim % 2 || p.factor <= 0)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "rope_yarn_tables: head_dim must be even and positive, factor positive");
    RopeTables t;
    t.n_positions = n_positions;
    t.half = p.head_dim / 2;
    t.cos.resize(size_t{n_positions} * t.half);
    t.sin.resize(t.cos.size());
    double corr[2];
    yarn_corr_dims(p, corr);
    const double freq_scale = 1.0 / p.factor;
    double mscale = p.attn_factor;
    if (p.ext_factor != 0.0) mscale *= 1.0 + 0.1 * std::log(1.0 / freq_scale);
    for (uint32_t i = 0; i < t.half; i++) {
        const double inv_freq = std::pow(p.freq_base, -2.0 * i / p.head_dim);
        const double y = (i - corr[0]) / std::max(0.001, corr[1] - corr[0]);
        const double ramp = (1.0 - std::clamp(y, 0.0, 1.0)) * p.ext_factor;
        for (uint32_t pos = 0; pos < n_positions; pos++) {
            const double extrap = pos * inv_freq;
            const double interp = freq_scale * extrap;
            const double theta = p.ext_factor != 0.0 ? interp * (1 - ramp) + extrap * ramp : interp;
            t.cos[size_t{pos} * t.half + i] = static_cast<float>(std::cos(theta) * mscale);
            t.sin[size_t{pos} * t.half + i] = static_cast<float>(std::sin(theta) * mscale);
        }
    }
    return t;
}

}  // namespace jal::kernels
