#include "serve_workload.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace jal::bench {

namespace {

uint32_t draw_len(std::mt19937_64& rng, uint32_t len, double ratio)
{
    const uint32_t lo = std::max<uint32_t>(1, static_cast<uint32_t>(std::ceil(len * ratio)));
    if (lo >= len) return len;
    return std::uniform_int_distribution<uint32_t>(lo, len)(rng);
}

}  // namespace

std::vector<BenchRequest> make_workload(const WorkloadSpec& spec, uint32_t n)
{
    std::mt19937_64 rng(spec.seed);
    std::uniform_int_distribution<int32_t> id(0, static_cast<int32_t>(spec.vocab) - 1);
    std::vector<BenchRequest> out(n);
    for (BenchRequest& r : out) {
        r.prompt.resize(draw_len(rng, spec.input_len, spec.range_ratio));
        for (int32_t& t : r.prompt) t = id(rng);
        r.output_len = draw_len(rng, spec.output_len, spec.range_ratio);
    }
    return out;
}

}  // namespace jal::bench
