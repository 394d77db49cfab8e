#include "engine_pool.hpp"

#include <stdexcept>

namespace jal::serve {

EnginePool::EnginePool(std::vector<std::unique_ptr<Engine>> engines, uint32_t max_in_flight)
    : engines_(std::move(engines)), max_in_flight_(max_in_flight)
{
    if (engines_.empty()) throw std::invalid_argument("jal-serve: no chip to serve on");
}

Engine::Admission EnginePool::submit(std::shared_ptr<Job> job)
{
    // The least loaded chip; among equals the search starts one further each time, so a
    // trickle of requests alternates over idle chips rather than piling on the first.
    const size_t n = engines_.size(), start = next_++ % n;
    size_t best = start;
    uint32_t best_load = UINT32_MAX, total = 0;
    for (size_t k = 0; k < n; ++k) {
        const size_t i = (start + k) % n;
        const uint32_t load = engines_[i]->load();
        total += load;
        if (load < best_load) best = i, best_load = load;
    }
    // Submissions come from the one HTTP thread, and engines only ever lower their load
    // concurrently, so the limit holds.
    if (total >= max_in_flight_) return Engine::Admission::busy;
    return engines_[best]->submit(std::move(job));
}

void EnginePool::drain()
{
    for (auto& e : engines_) e->drain();
}

void EnginePool::abort(const std::string& reason)
{
    for (auto& e : engines_) e->abort(reason);
}

void EnginePool::join()
{
    for (auto& e : engines_) e->join();
}

}  // namespace jal::serve
