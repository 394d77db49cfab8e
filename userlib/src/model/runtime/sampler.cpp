// Sampling from logits on the host: greedy, temperature with top-p (nucleus), and the
// top-K log-probabilities jal-run reports. Logits are a few hundred KiB at most, so this is
// cheaper on the host than another dispatch and a copy.
#include <algorithm>
#include <cmath>
#include <numeric>

#include <jal/model/runtime.hpp>

namespace jal::model {

int32_t argmax(std::span<const float> logits)
{
    int32_t best = 0;
    for (size_t i = 1; i < logits.size(); i++)
        if (logits[i] > logits[static_cast<size_t>(best)]) best = static_cast<int32_t>(i);
    return best;
}

std::vector<std::pair<int32_t, float>> top_logprobs(std::span<const float> logits, uint32_t k)
{
    if (logits.empty()) return {};
    // log-softmax in double: max + log(sum exp(x - max)).
    const float mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (float l : logits) sum += std::exp(static_cast<double>(l) - mx);
    const double lse = mx + std::log(sum);
    std::vector<int32_t> ids(logits.size());
    std::iota(ids.begin(), ids.end(), 0);
    k = std::min<uint32_t>(k, static_cast<uint32_t>(ids.size()));
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
        float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
        return la != lb ? la > lb : a < b;
    });
    std::vector<std::pair<int32_t, float>> out;
    for (uint32_t i = 0; i < k; i++)
        out.push_back({ids[i], static_cast<float>(logits[static_cast<size_t>(ids[i])] - lse)});
    return out;
}

Sampler::Sampler(const SamplerParams& params) : p_(params), rng_(params.seed) {}

int32_t Sampler::sample(std::span<const float> logits)
{
    if (p_.temperature <= 0 || logits.size() < 2) return argmax(logits);
    // Softmax at the temperature, then the smallest set of most likely ids whose mass
    // reaches top_p, then one draw from that set renormalised.
    const double inv_t = 1.0 / p_.temperature;
    const float mx = *std::max_element(logits.begin(), logits.end());
    std::vector<std::pair<double, int32_t>> probs(logits.size());
    double sum = 0;
    for (size_t i = 0; i < logits.size(); i++) {
        double e = std::exp((static_cast<double>(logits[i]) - mx) * inv_t);
        probs[i] = {e, static_cast<int32_t>(i)};
        sum += e;
    }
    std::sort(probs.begin(), probs.end(), [](auto& a, auto& b) {
        return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    const double top_p = std::clamp<double>(p_.top_p, 0.0, 1.0);
    double mass = 0;
    size_t keep = 0;
    while (keep < probs.size()) {
        mass += probs[keep].first / sum;
        keep++;
        if (mass >= top_p) break;
    }
    double kept = 0;
    for (size_t i = 0; i < keep; i++) kept += probs[i].first;
    // A uniform draw from 53 random bits, so the same seed gives the same ids everywhere.
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * kept;
    double acc = 0;
    for (size_t i = 0; i < keep; i++) {
        acc += probs[i].first;
        if (u < acc) return probs[i].second;
    }
    return probs[keep - 1].second;
}

}  // namespace jal::model
