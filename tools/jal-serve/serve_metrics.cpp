#include "serve_metrics.hpp"

#include <fmt/format.h>

namespace jal::serve {

namespace {

void header(std::string& out, const std::string& name, const char* type, const std::string& help)
{
    out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

void scalar(std::string& out, const std::string& name, const char* type, const std::string& help,
            double value)
{
    header(out, name, type, help);
    out += fmt::format("{} {}\n", name, value);
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0)
{}

void Histogram::observe(double v)
{
    size_t i = 0;
    while (i < bounds_.size() && v > bounds_[i]) i++;
    counts_[i]++;
    sum_ += v;
    count_++;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const
{
    header(out, name, "histogram", help);
    uint64_t cumulative = 0;
    for (size_t i = 0; i < bounds_.size(); i++) {
        cumulative += counts_[i];
        out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
    }
    out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
    out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
}

// Buckets for an emulated chip: the emulation is far slower than the modelled chip, so
// they reach from a millisecond to a minute.
Metrics::Metrics()
    : ttft_({0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}),
      tpot_({0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5})
{}

void Metrics::count_request(const std::string& endpoint, unsigned status)
{
    std::lock_guard lock(mutex_);
    requests_[{endpoint, status}]++;
}

void Metrics::count_tokens(uint64_t prompt, uint64_t generated)
{
    std::lock_guard lock(mutex_);
    prompt_tokens_ += prompt;
    generated_tokens_ += generated;
}

void Metrics::count_cancelled()
{
    std::lock_guard lock(mutex_);
    cancelled_++;
}

void Metrics::observe_ttft(double seconds)
{
    std::lock_guard lock(mutex_);
    ttft_.observe(seconds);
}

void Metrics::observe_tpot(double seconds)
{
    std::lock_guard lock(mutex_);
    tpot_.observe(seconds);
}

void Metrics::set_load(uint64_t waiting, uint64_t running)
{
    std::lock_guard lock(mutex_);
    waiting_ = waiting;
    running_ = running;
}

void Metrics::set_chip(const jal::model::ChipTotals& totals)
{
    std::lock_guard lock(mutex_);
    chip_ = totals;
}

uint64_t Metrics::running() const
{
    std::lock_guard lock(mutex_);
    return running_;
}

std::string Metrics::render() const
{
    std::lock_guard lock(mutex_);
    std::string out;
    header(out, "jal_serve_requests_total", "counter", "HTTP requests by endpoint and status");
    for (auto& [key, n] : requests_)
        out += fmt::format("jal_serve_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n",
                           key.first, key.second, n);
    scalar(out, "jal_serve_prompt_tokens_total", "counter", "Prompt tokens prefilled",
           double(prompt_tokens_));
    scalar(out, "jal_serve_generation_tokens_total", "counter", "Tokens generated",
           double(generated_tokens_));
    scalar(out, "jal_serve_requests_cancelled_total", "counter",
           "Generations stopped early: the client went away, or a stop string matched",
           double(cancelled_));
    ttft_.render(out, "jal_serve_time_to_first_token_seconds",
                 "Wall time from a request's arrival to its first generated token");
    tpot_.render(out, "jal_serve_time_per_output_token_seconds",
                 "Wall time between consecutive generated tokens of a request");
    scalar(out, "jal_serve_queue_depth", "gauge", "Requests waiting for a sequence slot",
           double(waiting_));
    scalar(out, "jal_serve_running_sequences", "gauge", "Sequences being generated",
           double(running_));
    scalar(out, "jal_serve_chip_modelled_seconds_total", "counter",
           "Modelled chip time of every dispatch (jal-emu's timing model)",
           chip_.modelled_ns / 1e9);
    const double dynamic_j = chip_.energy_nj / 1e9;
    const double modelled_s = chip_.modelled_ns / 1e9;
    scalar(out, "jal_serve_chip_energy_joules_total", "counter",
           "Modelled chip energy: dispatches' dynamic energy plus static power over modelled time",
           dynamic_j + jal::model::kStaticPowerW * modelled_s);
    scalar(out, "jal_serve_chip_power_watts", "gauge",
           "Modelled average chip power while busy (energy over modelled time; static power "
           "alone before any dispatch)",
           jal::model::kStaticPowerW + (modelled_s > 0 ? dynamic_j / modelled_s : 0));
    return out;
}

}  // namespace jal::serve
