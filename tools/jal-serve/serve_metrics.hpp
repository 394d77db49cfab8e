// The server's Prometheus metrics (docs/serving.md, "Metrics"): written by the HTTP
// sessions and the engine thread, rendered in the text exposition format by GET /metrics.
// Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include <jal/model/runtime.hpp>

namespace jal::serve {

// A cumulative histogram with fixed upper bounds (seconds).
class Histogram {
public:
    explicit Histogram(std::vector<double> bounds);
    void observe(double v);
    void render(std::string& out, const std::string& name, const std::string& help) const;

private:
    std::vector<double> bounds_;
    std::vector<uint64_t> counts_;  // per bucket (not cumulative); the last one is +Inf
    double sum_ = 0;
    uint64_t count_ = 0;
};

class Metrics {
public:
    Metrics();

    void count_request(const std::string& endpoint, unsigned status);
    void count_tokens(uint64_t prompt, uint64_t generated);
    void count_cancelled();
    void observe_ttft(double seconds);
    void observe_tpot(double seconds);
    // Per chip (the server's chips 0..n-1); the unlabelled gauges and counters are sums.
    void set_load(unsigned chip, uint64_t waiting, uint64_t running);
    void count_admitted(unsigned chip);
    // The chip's model runtime's modelled totals since it opened.
    void set_chip(unsigned chip, const jal::model::ChipTotals& totals);

    uint64_t running() const;  // on every chip
    std::string render() const;

private:
    mutable std::mutex mutex_;
    std::map<std::pair<std::string, unsigned>, uint64_t> requests_;
    uint64_t prompt_tokens_ = 0, generated_tokens_ = 0, cancelled_ = 0;
    struct Chip {
        uint64_t waiting = 0, running = 0, admitted = 0;
        jal::model::ChipTotals totals;
    };
    Chip& chip_locked(unsigned chip);
    void render_chips(std::string& out) const;

    Histogram ttft_, tpot_;
    std::vector<Chip> chips_;
};

}  // namespace jal::serve
