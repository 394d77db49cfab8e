// `jal-bench serve --url`: a live jal-serve (or any OpenAI-compatible server that streams
// token ids) driven over HTTP with Boost.Beast, in wall-clock time. `concurrency` threads
// each keep one streamed /v1/completions request in flight (a connection each), as
// benchmark_serving's --max-concurrency does; /metrics is read before and after each point
// for the chip's modelled time and energy.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve_stats.hpp"
#include "serve_workload.hpp"

namespace jal::bench {

struct HttpOptions {
    std::string url;    // http://HOST:PORT
    std::string model;  // sent as "model" when not empty
    bool progress = true;
};

class HttpTarget {
public:
    // Parses the URL (throws std::invalid_argument); connects to nothing yet.
    explicit HttpTarget(const HttpOptions& options);

    PointRun run_point(uint32_t concurrency, const std::vector<BenchRequest>& requests);
    nlohmann::json describe() const;

private:
    // The chip's cumulative modelled seconds and energy from /metrics (known = false when
    // the server does not export them).
    ChipUse read_chip() const;

    HttpOptions options_;
    std::string host_, port_;
};

// The value of an unlabelled sample in Prometheus text, or -1 when absent.
double prometheus_value(const std::string& text, const std::string& name);

}  // namespace jal::bench
