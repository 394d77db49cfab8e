#include "serve_http.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <regex>
#include <stdexcept>
#include <thread>

#include "serve_http_stream.hpp"

namespace jal::bench {

using Clock = std::chrono::steady_clock;

double prometheus_value(const std::string& text, const std::string& name)
{
    std::smatch m;
    if (!std::regex_search(text, m, std::regex("(^|\n)" + name + " ([-0-9.e+]+)(\n|$)"))) return -1;
    return std::stod(m[2]);
}

HttpTarget::HttpTarget(const HttpOptions& options) : options_(options)
{
    std::smatch m;
    if (!std::regex_match(options.url, m, std::regex(R"(http://([^:/]+):(\d+)/?)")))
        throw std::invalid_argument("--url: expected http://HOST:PORT, got '" + options.url + "'");
    host_ = m[1];
    port_ = m[2];
}

ChipUse HttpTarget::read_chip() const
{
    // jal-serve updates the chip's totals after a step's tokens are out, then the gauges:
    // once nothing runs or waits, the totals include every step (polled, at most 30 s).
    std::string text;
    const auto deadline = Clock::now() + std::chrono::seconds(30);
    do {
        text = http_get({host_, port_}, "/metrics");
        if (prometheus_value(text, "jal_serve_running_sequences") <= 0 &&
            prometheus_value(text, "jal_serve_queue_depth") <= 0)
            break;
        std::this_thread::yield();
    } while (Clock::now() < deadline);
    ChipUse c;
    c.modelled_s = prometheus_value(text, "jal_serve_chip_modelled_seconds_total");
    c.energy_j = prometheus_value(text, "jal_serve_chip_energy_joules_total");
    c.known = c.modelled_s >= 0 && c.energy_j >= 0;
    return c;
}

PointRun HttpTarget::run_point(uint32_t concurrency, const std::vector<BenchRequest>& requests)
{
    PointRun out;
    out.requests.resize(requests.size());
    const ChipUse before = read_chip();
    const Clock::time_point epoch = Clock::now();
    std::atomic<size_t> next{0}, done{0};
    std::mutex progress_mutex;
    auto last_report = epoch;
    auto worker = [&] {
        for (size_t i; (i = next.fetch_add(1)) < requests.size();) {
            out.requests[i] = stream_completion({host_, port_}, requests[i], options_.model, epoch);
            const size_t n = ++done;
            std::lock_guard lock(progress_mutex);
            if (options_.progress &&
                (n == requests.size() || Clock::now() - last_report > std::chrono::seconds(5))) {
                last_report = Clock::now();
                std::fprintf(stderr, "jal-bench serve: concurrency %u: %zu/%zu requests done\n",
                             concurrency, n, requests.size());
            }
        }
    };
    std::vector<std::thread> threads;
    for (uint32_t c = 0; c < concurrency; c++) threads.emplace_back(worker);
    for (std::thread& t : threads) t.join();
    out.duration_s = std::chrono::duration<double>(Clock::now() - epoch).count();
    // The chip's figures are cumulative since the server started: this point's share is
    // the difference (the server must serve no one else meanwhile).
    const ChipUse after = read_chip();
    out.chip.known = before.known && after.known;
    out.chip.modelled_s = after.modelled_s - before.modelled_s;
    out.chip.energy_j = after.energy_j - before.energy_j;
    return out;
}

nlohmann::json HttpTarget::describe() const
{
    return {{"kind", "server"}, {"url", options_.url}, {"time_base", "wall"}};
}

}  // namespace jal::bench
