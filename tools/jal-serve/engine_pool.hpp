// The server's chips: one Engine (one model runtime, one batching thread) per chip, and
// each new request sent to the chip with the least work (docs/serving.md, "Several chips").
// Data parallel: every chip holds the whole model, so a request never spans chips.
#pragma once

#include <memory>
#include <vector>

#include "engine.hpp"

namespace jal::serve {

class EnginePool {
public:
    // `max_in_flight`: requests accepted and not finished over every chip (HTTP 429 beyond).
    EnginePool(std::vector<std::unique_ptr<Engine>> engines, uint32_t max_in_flight);

    size_t size() const { return engines_.size(); }
    const jal::model::GptOssConfig& config() const { return engines_.front()->config(); }
    uint32_t n_ctx() const { return engines_.front()->n_ctx(); }

    Engine::Admission submit(std::shared_ptr<Job> job);
    void drain();
    void abort(const std::string& reason);
    void join();

private:
    std::vector<std::unique_ptr<Engine>> engines_;
    const uint32_t max_in_flight_;
    size_t next_ = 0;  // where the search for the least loaded chip starts
};

}  // namespace jal::serve
