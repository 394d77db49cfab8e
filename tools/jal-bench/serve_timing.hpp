// `jal-bench serve --timing-only`: no server; a timing-only model Runtime of a named shape
// on a private emulated chip, driven with jal-serve's scheduler (tools/jal-serve/engine.hpp)
// in modelled chip time. Each step admits waiting requests into free sequence slots
// (prefilling each one, which gives its first token), then decodes every running sequence
// together once; a finished request frees its slot and its client sends the next request
// at once, so `concurrency` requests are in flight. TTFT = queue wait + the prefill.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve_stats.hpp"
#include "serve_workload.hpp"

namespace jal::bench {

struct TimingOptions {
    std::string shape = "gpt-oss-120b";
    std::string emu_dir;
    unsigned device = 0;
    uint32_t slices = 0;         // 0: every slice
    uint32_t measure_steps = 3;  // decode steps run per batch size; 0: run every step
    bool progress = true;        // lines on stderr
    bool mixed = true;           // prompts in chunks inside decode steps (jal-serve's engine)
};

class TimingTarget {
public:
    // Starts (or finds) the chip; each point opens the shape with as many sequence slots
    // as its concurrency, each with room for the longest request.
    TimingTarget(const TimingOptions& options, uint32_t max_input, uint32_t max_output);
    ~TimingTarget();

    uint32_t vocab() const;
    // The requests through the scheduler at this concurrency, in modelled time.
    PointRun run_point(uint32_t concurrency, const std::vector<BenchRequest>& requests);
    // What was run and what projected at the last point; the target's description.
    nlohmann::json last_counts() const;
    nlohmann::json describe() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace jal::bench
