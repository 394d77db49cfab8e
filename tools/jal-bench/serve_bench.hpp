// `jal-bench serve`: an InferenceX-style serving benchmark (docs/serving.md, "Benchmark").
// For each concurrency of the sweep, 10 × concurrency random requests (benchmark_serving's
// random dataset, greedy, ignore_eos) with that many in flight, against a live jal-serve
// (--url, wall-clock time) or a timing-only model in-process (--timing-only, modelled
// chip time); one document of per-concurrency figures.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve_workload.hpp"

namespace jal::bench {

struct ServeBenchOptions {
    std::string url;  // a live server; empty with timing_only
    bool timing_only = false;
    std::string shape = "gpt-oss-120b";
    std::string model;  // sent as "model" to the server (optional)
    WorkloadSpec workload;
    bool vocab_given = false;  // else: 256 for a server, the shape's vocabulary in-process
    std::vector<uint32_t> concurrency = {1, 2, 4, 8};
    uint32_t num_prompts = 0;  // 0: 10 × concurrency
    uint32_t measure_steps = 3;
    std::string schedule = "mixed";  // --timing-only: mixed (jal-serve's) or serial
    uint32_t slices = 0;
    std::string emu_dir;
    unsigned device = 0;
    bool quiet = false;
};

// Runs the sweep; the document: {"workload", "target", "points": [...]}.
nlohmann::json run_serve_bench(const ServeBenchOptions& o);

}  // namespace jal::bench
