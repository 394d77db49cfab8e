// Continuous batching (docs/serving.md, "Batching and cancellation"): one thread owns the
// model runtime. Requests wait in a queue and are admitted into free sequence slots; each
// step runs one decode over every running sequence together, with a chunk of the oldest
// admitted prompt in the same pass (chunked prefill: a new prompt does not stall the
// others' tokens). A sequence that finishes or whose client went away is freed at once,
// so its slot serves the next request in the same step.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <jal/model/runtime.hpp>

#include "job.hpp"
#include "serve_metrics.hpp"

namespace jal::serve {

struct EngineLimits {
    uint32_t max_running = 8;     // sequence slots decoded together (RuntimeOptions::max_sequences)
    uint32_t max_in_flight = 64;  // waiting + running; submit() refuses more (HTTP 429)
};

class Engine {
public:
    // `chip`: which of the server's chips it drives (the label of its metrics).
    Engine(std::unique_ptr<jal::model::Runtime> runtime, EngineLimits limits, Metrics& metrics,
           unsigned chip = 0);
    // abort("the server is shutting down") and join().
    ~Engine();
    Engine(const Engine&) = delete;
    Engine& operator=(const Engine&) = delete;

    const jal::model::GptOssConfig& config() const { return config_; }
    uint32_t n_ctx() const { return n_ctx_; }

    enum class Admission { accepted, busy, stopping };
    Admission submit(std::shared_ptr<Job> job);
    // Requests accepted and not finished (waiting + running).
    uint32_t load();
    // Refuses new requests; the thread ends once every accepted one has finished.
    void drain();
    // Ends every accepted request now with an error carrying `reason`, and drains.
    void abort(const std::string& reason);
    void join();

private:
    struct Running {
        std::shared_ptr<Job> job;
        int seq = -1;
        jal::model::Sampler sampler;
        int32_t next = 0;  // sampled, not yet run through the model
        uint32_t generated = 0;
        Clock::time_point last_token;
        uint32_t prompt_done = 0;  // prompt tokens run so far; the rest go in later steps
        bool prefilling() const { return prompt_done < job->params().prompt.size(); }
    };

    void run();
    // Waits for work; false when drained and there is nothing left.
    bool wait_for_work();
    void admit();
    void start(std::shared_ptr<Job> job);
    void step();
    // One pass: the decode rows of `decoding` (indices into running_) and, if `filling`, the
    // next chunk of its prompt. Returns the decode rows' logits, then the chunk's (if any).
    std::vector<std::vector<float>> run_pass(const std::vector<size_t>& decoding, Running* filling);
    // The chunk `filling` just ran: counted, and its first token out once the prompt is done.
    // True if that finished the request.
    bool prompt_chunk_done(Running& r, const std::vector<float>& logits);
    // Hands the sampled token of `r` to its job; true if the request is complete.
    bool deliver(Running& r, const std::vector<float>& logits);
    void retire(Running& r, FinishReason reason, const std::string& error = {});
    void fail_all(const std::string& error);
    void publish_load();

    std::unique_ptr<jal::model::Runtime> rt_;
    const jal::model::GptOssConfig config_;
    const uint32_t n_ctx_;
    const EngineLimits limits_;
    Metrics& metrics_;
    const unsigned chip_;

    std::mutex mutex_;  // guards waiting_, draining_, abort_reason_
    std::condition_variable wake_;
    std::deque<std::shared_ptr<Job>> waiting_;
    bool draining_ = false;
    std::optional<std::string> abort_reason_;
    uint32_t running_count_ = 0;  // read by submit() under mutex_, written by the thread

    std::vector<Running> running_;  // the engine thread's only
    std::thread thread_;
};

}  // namespace jal::serve
