// The arithmetic of `jal-bench serve` (docs/serving.md, "Benchmark"): percentiles and the
// per-concurrency figures of InferenceX's benchmark_serving from each request's timings,
// in whichever time base the target measures (wall clock against a live jal-serve,
// modelled chip time in-process). Separate from the clients so unit tests check it alone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace jal::bench {

// The published normalisation of per-kW figures: the chip's rated 700 W package power
// (tools/jal-run/metrics.hpp, kRatedPowerKw).
inline constexpr double kRatedPowerW = 700.0;

// What one request measured (seconds in the target's time base).
struct RequestTiming {
    uint32_t prompt_tokens = 0;
    uint32_t output_tokens = 0;
    double start_s = 0;         // sent (live) or arrived at the scheduler (in-process)
    double ttft_s = 0;          // start to the first content chunk
    double e2e_s = 0;           // start to the last token
    std::vector<double> itl_s;  // gaps between consecutive content chunks
    std::string error;          // not empty: the request failed and counts only as failed
};

struct Distribution {
    double mean = 0, median = 0, p90 = 0, p99 = 0;
};

// The p-th percentile (0..100) of `values`, interpolated linearly between the closest
// ranks as numpy.percentile does (what benchmark_serving reports). 0 for no values.
double percentile(std::vector<double> values, double p);
// Mean, median, p90 and p99 of `values`, scaled by `scale` (1000: seconds to ms).
Distribution distribution(const std::vector<double>& values, double scale = 1.0);

// The chip's modelled time and energy over one concurrency point.
struct ChipUse {
    double modelled_s = 0;
    double energy_j = 0;  // dynamic plus static power over modelled_s
    bool known = false;   // false: the target does not export them
};

struct PointFigures {
    uint32_t concurrency = 0;
    uint32_t completed = 0, failed = 0;
    uint64_t input_tokens = 0, output_tokens = 0;
    double duration_s = 0;  // first request sent to the last one done
    Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
    double request_s = 0;                    // completed requests per second
    double output_tok_s = 0;                 // output tokens / duration
    double mixed_tok_s = 0;                  // (input + output) tokens / duration
    double tok_s_user = 0;                   // 1000 / mean TPOT in ms (InferenceX's interactivity)
    double mixed_tok_s_per_kw_rated = 0;     // mixed_tok_s / 0.7 kW
    double avg_power_w = 0;                  // modelled: chip energy / chip modelled time
    double mixed_tok_s_per_kw_modelled = 0;  // mixed_tok_s / (avg_power_w / 1000)
    ChipUse chip;
    // The tokens over the chip's modelled busy time (equal to mixed_tok_s in modelled time).
    double chip_mixed_tok_s = 0, chip_mixed_tok_s_per_kw_rated = 0;
    double chip_mixed_tok_s_per_kw_modelled = 0;
};

// What a target measured at one concurrency.
struct PointRun {
    std::vector<RequestTiming> requests;
    double duration_s = 0;
    ChipUse chip;
};

// A request's TPOT: (E2E − TTFT) / (out − 1); 0 for fewer than two output tokens.
double tpot_s(const RequestTiming& r);

// The figures of one concurrency point from its requests (failed ones count only as
// failed), its duration and the chip's use over it.
PointFigures compute_point(uint32_t concurrency, const std::vector<RequestTiming>& requests,
                           double duration_s, const ChipUse& chip);

}  // namespace jal::bench
