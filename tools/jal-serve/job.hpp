// One generation request as the engine sees it: what to generate, and the mailbox through
// which the engine thread hands generated ids to the HTTP session that waits for them.
// Every method is thread-safe; the notify callback runs on the engine thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include <jal/model/runtime.hpp>

namespace jal::serve {

using Clock = std::chrono::steady_clock;

struct GenerationParams {
    std::vector<int32_t> prompt;
    uint32_t max_tokens = 16;
    jal::model::SamplerParams sampling;
    // Ids that end the reply (finish_reason "stop"); the id itself is not part of the reply.
    std::vector<int32_t> stop_ids;
};

enum class FinishReason { none, length, stop, cancelled, error };
const char* finish_reason_name(FinishReason r);  // "length", "stop", ... ("" for none)

class Job {
public:
    explicit Job(GenerationParams params) : params_(std::move(params)) {}

    const GenerationParams& params() const { return params_; }
    Clock::time_point submitted() const { return submitted_; }

    // ---- the session's side ----
    struct Update {
        std::vector<int32_t> tokens;  // generated since the last take()
        FinishReason finish = FinishReason::none;
        std::string error;               // with FinishReason::error
        uint32_t completion_tokens = 0;  // so far, including a stop id that ended the reply
    };
    // Runs on the engine thread after every publish (must not block or throw).
    void set_notify(std::function<void()> notify);
    Update take();
    // The client went away or the reply is complete (a stop string matched): the engine
    // frees the sequence at its next step.
    void cancel();
    bool cancelled() const;

    // ---- the engine's side ----
    // `stop_id`: the reply ended on a stop id, counted in the usage but not delivered.
    void publish(const std::vector<int32_t>& tokens, FinishReason finish, std::string error = {},
                 bool stop_id = false);
    bool finished() const;

private:
    const GenerationParams params_;
    const Clock::time_point submitted_ = Clock::now();
    mutable std::mutex mutex_;
    std::function<void()> notify_;
    std::vector<int32_t> pending_;
    FinishReason finish_ = FinishReason::none;
    std::string error_;
    uint32_t completion_tokens_ = 0;
    bool cancelled_ = false;
};

}  // namespace jal::serve
