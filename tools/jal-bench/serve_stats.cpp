#include "serve_stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace jal::bench {

double percentile(std::vector<double> values, double p)
{
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    const double rank = std::clamp(p, 0.0, 100.0) / 100.0 * double(values.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(rank));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (values[hi] - values[lo]) * (rank - double(lo));
}

Distribution distribution(const std::vector<double>& values, double scale)
{
    Distribution d;
    if (values.empty()) return d;
    d.mean = std::accumulate(values.begin(), values.end(), 0.0) / double(values.size()) * scale;
    d.median = percentile(values, 50) * scale;
    d.p90 = percentile(values, 90) * scale;
    d.p99 = percentile(values, 99) * scale;
    return d;
}

double tpot_s(const RequestTiming& r)
{
    if (r.output_tokens < 2) return 0;
    return (r.e2e_s - r.ttft_s) / double(r.output_tokens - 1);
}

namespace {

double ratio(double num, double den)
{
    return den > 0 ? num / den : 0;
}

}  // namespace

PointFigures compute_point(uint32_t concurrency, const std::vector<RequestTiming>& requests,
                           double duration_s, const ChipUse& chip)
{
    PointFigures f;
    f.concurrency = concurrency;
    f.duration_s = duration_s;
    f.chip = chip;
    std::vector<double> ttft, tpot, itl, e2e;
    for (const RequestTiming& r : requests) {
        if (!r.error.empty()) {
            f.failed++;
            continue;
        }
        f.completed++;
        f.input_tokens += r.prompt_tokens;
        f.output_tokens += r.output_tokens;
        ttft.push_back(r.ttft_s);
        e2e.push_back(r.e2e_s);
        // As benchmark_serving: TPOT only of requests with more than one output token.
        if (r.output_tokens > 1) tpot.push_back(tpot_s(r));
        itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    }
    f.ttft_ms = distribution(ttft, 1e3);
    f.tpot_ms = distribution(tpot, 1e3);
    f.itl_ms = distribution(itl, 1e3);
    f.e2e_ms = distribution(e2e, 1e3);
    const double mixed = double(f.input_tokens + f.output_tokens);
    f.request_s = ratio(f.completed, duration_s);
    f.output_tok_s = ratio(double(f.output_tokens), duration_s);
    f.mixed_tok_s = ratio(mixed, duration_s);
    f.tok_s_user = ratio(1000.0, f.tpot_ms.mean);
    f.mixed_tok_s_per_kw_rated = f.mixed_tok_s / (kRatedPowerW / 1000);
    if (chip.known) {
        f.avg_power_w = ratio(chip.energy_j, chip.modelled_s);
        f.mixed_tok_s_per_kw_modelled = ratio(f.mixed_tok_s, f.avg_power_w / 1000);
        f.chip_mixed_tok_s = ratio(mixed, chip.modelled_s);
        f.chip_mixed_tok_s_per_kw_rated = f.chip_mixed_tok_s / (kRatedPowerW / 1000);
        f.chip_mixed_tok_s_per_kw_modelled = ratio(f.chip_mixed_tok_s, f.avg_power_w / 1000);
    }
    return f;
}

}  // namespace jal::bench
