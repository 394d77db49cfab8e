#include "serve_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>

#include "serve_http.hpp"
#include "serve_report.hpp"
#include "serve_timing.hpp"

namespace jal::bench {

namespace {

uint32_t prompts_at(const ServeBenchOptions& o, uint32_t c)
{
    return o.num_prompts ? o.num_prompts : 10 * c;
}

nlohmann::json workload_json(const ServeBenchOptions& o, const WorkloadSpec& w)
{
    auto low = [&](uint32_t len) {
        return std::max<uint32_t>(1, static_cast<uint32_t>(std::ceil(len * w.range_ratio)));
    };
    return {{"dataset", "random"},
            {"input_len", w.input_len},
            {"output_len", w.output_len},
            {"min_input_len", std::min(low(w.input_len), w.input_len)},
            {"min_output_len", std::min(low(w.output_len), w.output_len)},
            {"range_ratio", w.range_ratio},
            {"vocab", w.vocab},
            {"seed", w.seed},
            {"num_prompts",
             o.num_prompts ? nlohmann::json(o.num_prompts) : nlohmann::json("10 x concurrency")},
            {"ignore_eos", true},
            {"temperature", 0},
            {"concurrency", o.concurrency}};
}

// One target: either kind, run point by point.
struct Target {
    std::unique_ptr<HttpTarget> http;
    std::unique_ptr<TimingTarget> timing;
    PointRun run(uint32_t c, const std::vector<BenchRequest>& r)
    {
        return http ? http->run_point(c, r) : timing->run_point(c, r);
    }
};

}  // namespace

nlohmann::json run_serve_bench(const ServeBenchOptions& o)
{
    WorkloadSpec w = o.workload;
    Target target;
    if (o.timing_only) {
        TimingOptions to{o.shape,
                         o.emu_dir,
                         o.device,
                         o.slices,
                         o.measure_steps,
                         !o.quiet,
                         o.schedule == "mixed"};
        if (!o.quiet)
            std::fprintf(stderr, "jal-bench serve: opening %s (timing only)\n", o.shape.c_str());
        target.timing = std::make_unique<TimingTarget>(to, w.input_len, w.output_len);
        if (!o.vocab_given) w.vocab = target.timing->vocab();
    } else {
        target.http = std::make_unique<HttpTarget>(HttpOptions{o.url, o.model, !o.quiet});
    }
    nlohmann::json doc = {
        {"workload", workload_json(o, w)},
        {"target", target.http ? target.http->describe() : target.timing->describe()},
        {"points", nlohmann::json::array()}};
    for (uint32_t c : o.concurrency) {
        // The same seed at every point: a point's requests are a prefix of a larger one's.
        const std::vector<BenchRequest> requests = make_workload(w, prompts_at(o, c));
        const auto t0 = std::chrono::steady_clock::now();
        PointRun run = target.run(c, requests);
        const double wall_s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        nlohmann::json p = point_json(compute_point(c, run.requests, run.duration_s, run.chip));
        p["wall_s"] = wall_s;  // this machine's time for the point (its emulation, in-process)
        if (target.timing) p["cost"] = target.timing->last_counts();
        for (const RequestTiming& r : run.requests)
            if (!r.error.empty()) p["errors"].push_back(r.error);
        doc["points"].push_back(p);
    }
    return doc;
}

}  // namespace jal::bench
