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

Metrics::Chip& Metrics::chip_locked(unsigned chip)
{
    if (chip >= chips_.size()) chips_.resize(chip + 1);
    return chips_[chip];
}

void Metrics::set_load(unsigned chip, uint64_t waiting, uint64_t running)
{
    std::lock_guard lock(mutex_);
    chip_locked(chip).waiting = waiting;
    chip_locked(chip).running = running;
}

void Metrics::count_admitted(unsigned chip)
{
    std::lock_guard lock(mutex_);
    chip_locked(chip).admitted++;
}

void Metrics::set_chip(unsigned chip, const jal::model::ChipTotals& totals)
{
    std::lock_guard lock(mutex_);
    chip_locked(chip).totals = totals;
}

uint64_t Metrics::running() const
{
    std::lock_guard lock(mutex_);
    uint64_t n = 0;
    for (const Chip& c : chips_) n += c.running;
    return n;
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
    render_chips(out);
    return out;
}

// The load and the modelled chip figures: sums over the chips unlabelled (what a client of
// one server wants), then each chip's under its label.
void Metrics::render_chips(std::string& out) const
{
    Chip sum;
    std::vector<double> watts;
    for (const Chip& c : chips_) {
        sum.waiting += c.waiting, sum.running += c.running;
        sum.totals.modelled_ns += c.totals.modelled_ns;  // what the figures below use
        sum.totals.energy_nj += c.totals.energy_nj;
        const double dynamic_j = c.totals.energy_nj / 1e9, modelled_s = c.totals.modelled_ns / 1e9;
        watts.push_back(jal::model::kStaticPowerW + (modelled_s > 0 ? dynamic_j / modelled_s : 0));
    }
    scalar(out, "jal_serve_queue_depth", "gauge", "Requests waiting for a sequence slot",
           double(sum.waiting));
    scalar(out, "jal_serve_running_sequences", "gauge", "Sequences being generated",
           double(sum.running));
    scalar(out, "jal_serve_chips", "gauge", "Chips the server generates on", double(chips_.size()));
    scalar(out, "jal_serve_chip_modelled_seconds_total", "counter",
           "Modelled chip time of every dispatch (jal-emu's timing model), summed over the chips",
           sum.totals.modelled_ns / 1e9);
    scalar(out, "jal_serve_chip_energy_joules_total", "counter",
           "Modelled chip energy: dispatches' dynamic energy plus static power over modelled "
           "time, summed over the chips",
           sum.totals.energy_nj / 1e9 + jal::model::kStaticPowerW * sum.totals.modelled_ns / 1e9);
    double power_w = 0;
    for (double w : watts) power_w += w;
    scalar(out, "jal_serve_chip_power_watts", "gauge",
           "Modelled average power while busy (energy over modelled time; static power alone "
           "before any dispatch), summed over the chips",
           power_w);
    auto by_chip = [&](const char* name, const char* type, const char* help, auto value) {
        header(out, name, type, help);
        for (size_t i = 0; i < chips_.size(); ++i)
            out += fmt::format("{}{{chip=\"{}\"}} {}\n", name, i, value(i));
    };
    by_chip("jal_serve_chip_requests_admitted_total", "counter", "Requests each chip accepted",
            [&](size_t i) { return chips_[i].admitted; });
    by_chip("jal_serve_chip_running", "gauge", "Sequences being generated on each chip",
            [&](size_t i) { return chips_[i].running; });
    by_chip("jal_serve_chip_power_by_chip_watts", "gauge", "Each chip's modelled average power",
            [&](size_t i) { return watts[i]; });
}

}  // namespace jal::serve
