#include "engine.hpp"

#include <algorithm>
#include <exception>

namespace jal::serve {

namespace {

double seconds_since(Clock::time_point t)
{
    return std::chrono::duration<double>(Clock::now() - t).count();
}

}  // namespace

Engine::Engine(std::unique_ptr<jal::model::Runtime> runtime, EngineLimits limits, Metrics& metrics,
               unsigned chip)
    : rt_(std::move(runtime)), config_(rt_->config()), n_ctx_(rt_->options().n_ctx),
      limits_(limits), metrics_(metrics), chip_(chip)
{
    thread_ = std::thread([this] { run(); });
}

Engine::~Engine()
{
    abort("the server is shutting down");
    join();
}

Engine::Admission Engine::submit(std::shared_ptr<Job> job)
{
    {
        std::lock_guard lock(mutex_);
        if (draining_) return Admission::stopping;
        if (waiting_.size() + running_count_ >= limits_.max_in_flight) return Admission::busy;
        waiting_.push_back(std::move(job));
        metrics_.set_load(chip_, waiting_.size(), running_count_);
        metrics_.count_admitted(chip_);
    }
    wake_.notify_one();
    return Admission::accepted;
}

uint32_t Engine::load()
{
    std::lock_guard lock(mutex_);
    return static_cast<uint32_t>(waiting_.size()) + running_count_;
}

void Engine::drain()
{
    {
        std::lock_guard lock(mutex_);
        draining_ = true;
    }
    wake_.notify_one();
}

void Engine::abort(const std::string& reason)
{
    {
        std::lock_guard lock(mutex_);
        draining_ = true;
        abort_reason_ = reason;
    }
    wake_.notify_one();
}

void Engine::join()
{
    if (thread_.joinable()) thread_.join();
}

void Engine::run()
{
    while (wait_for_work()) {
        try {
            admit();
            step();
        } catch (const std::exception& e) {
            // The runtime failed outside one request's prefill: nothing running can be
            // trusted to continue.
            fail_all(std::string("the model runtime failed: ") + e.what());
        }
        metrics_.set_chip(chip_, rt_->total());
        publish_load();
    }
}

bool Engine::wait_for_work()
{
    std::unique_lock lock(mutex_);
    wake_.wait(lock, [&] {
        // A cancelled request in the queue is work too: it is answered and dropped.
        return !running_.empty() || abort_reason_ || draining_ ||
               (!waiting_.empty() && running_.size() < limits_.max_running) ||
               std::any_of(waiting_.begin(), waiting_.end(),
                           [](auto& j) { return j->cancelled(); });
    });
    if (abort_reason_) {
        const std::string reason = *abort_reason_;
        lock.unlock();
        fail_all(reason);
        lock.lock();
    }
    return !(draining_ && waiting_.empty() && running_.empty());
}

// Moves queued requests into free slots (prefilling each) and drops the ones whose clients
// left while they waited.
void Engine::admit()
{
    for (;;) {
        std::shared_ptr<Job> job;
        {
            std::lock_guard lock(mutex_);
            auto gone = std::stable_partition(waiting_.begin(), waiting_.end(),
                                              [](auto& j) { return !j->cancelled(); });
            for (auto it = gone; it != waiting_.end(); ++it) {
                (*it)->publish({}, FinishReason::cancelled);
                metrics_.count_cancelled();
            }
            waiting_.erase(gone, waiting_.end());
            if (waiting_.empty() || running_.size() >= limits_.max_running) return;
            job = std::move(waiting_.front());
            waiting_.pop_front();
            // Counted as running from the moment it leaves the queue: a submit() during
            // its prefill must not see a free place that is not there.
            running_count_++;
        }
        start(std::move(job));
    }
}

// Takes a slot; the prompt runs in chunks inside the next steps.
void Engine::start(std::shared_ptr<Job> job)
{
    Running r{job, -1, jal::model::Sampler(job->params().sampling), 0, 0, Clock::now()};
    try {
        r.seq = rt_->create_sequence();
    } catch (const std::exception& e) {
        retire(r, FinishReason::error, std::string("prefill failed: ") + e.what());
        return;
    }
    running_.push_back(std::move(r));
    publish_load();  // a client may look at once
}

// One pass over every running sequence: a decode row for each that has its prompt done,
// and the next chunk of the first one still prefilling (as many of its tokens as the pass
// has rows left); the finished ones leave the batch.
void Engine::step()
{
    std::vector<size_t> decoding;
    Running* filling = nullptr;
    for (auto it = running_.begin(); it != running_.end();) {
        if (it->job->cancelled()) {
            retire(*it, FinishReason::cancelled);
            it = running_.erase(it);
            continue;
        }
        ++it;
    }
    for (size_t i = 0; i < running_.size(); i++) {
        if (!running_[i].prefilling())
            decoding.push_back(i);
        else if (!filling)
            filling = &running_[i];
    }
    if (decoding.empty() && !filling) return;
    std::vector<std::vector<float>> logits = run_pass(decoding, filling);
    std::vector<bool> done(running_.size(), false);
    for (size_t i = 0; i < decoding.size(); i++) {
        Running& r = running_[decoding[i]];
        metrics_.observe_tpot(seconds_since(r.last_token));
        done[decoding[i]] = deliver(r, logits[i]);
    }
    if (filling && logits.size() > decoding.size())
        done[filling - running_.data()] = prompt_chunk_done(*filling, logits.back());
    std::vector<Running> still;
    for (size_t i = 0; i < running_.size(); i++)
        if (!done[i]) still.push_back(std::move(running_[i]));
    running_ = std::move(still);
}

std::vector<std::vector<float>> Engine::run_pass(const std::vector<size_t>& decoding,
                                                 Running* filling)
{
    std::vector<std::pair<int, int32_t>> batch;
    for (size_t i : decoding) batch.push_back({running_[i].seq, running_[i].next});
    const uint32_t rows = rt_->options().max_batch_tokens;
    if (!filling || batch.size() >= rows) return rt_->decode(batch);
    const std::span<const int32_t> prompt(filling->job->params().prompt);
    const size_t n = std::min<size_t>(rows - batch.size(), prompt.size() - filling->prompt_done);
    const std::span<const int32_t> chunk = prompt.subspan(filling->prompt_done, n);
    std::vector<std::vector<float>> logits;
    if (batch.empty())
        logits.push_back(rt_->prefill(filling->seq, chunk));
    else
        logits = rt_->mixed_step(batch, filling->seq, chunk);
    filling->prompt_done += static_cast<uint32_t>(n);
    metrics_.count_tokens(n, 0);
    return logits;
}

bool Engine::prompt_chunk_done(Running& r, const std::vector<float>& logits)
{
    if (r.prefilling()) return false;
    metrics_.observe_ttft(seconds_since(r.job->submitted()));
    return deliver(r, logits);
}

bool Engine::deliver(Running& r, const std::vector<float>& logits)
{
    const GenerationParams& p = r.job->params();
    r.next = r.sampler.sample(logits);
    r.last_token = Clock::now();
    r.generated++;
    metrics_.count_tokens(0, 1);
    const bool stop = std::find(p.stop_ids.begin(), p.stop_ids.end(), r.next) != p.stop_ids.end();
    const bool last = stop || r.generated >= p.max_tokens;
    // Freed before the client hears that it is done: a finished reply holds no slot.
    if (last) retire(r, FinishReason::none);
    if (stop)
        r.job->publish({}, FinishReason::stop, {}, true);
    else
        r.job->publish({r.next}, last ? FinishReason::length : FinishReason::none);
    return last;
}

// Frees the sequence; `reason` (unless none) is what the job is told, if it has not
// finished already.
void Engine::retire(Running& r, FinishReason reason, const std::string& error)
{
    if (r.seq >= 0) rt_->free_sequence(r.seq);
    r.seq = -1;
    if (reason == FinishReason::cancelled) metrics_.count_cancelled();
    if (reason != FinishReason::none) r.job->publish({}, reason, error);
}

void Engine::fail_all(const std::string& error)
{
    for (Running& r : running_) {
        try {
            retire(r, FinishReason::error, error);
        } catch (const std::exception&) {
            r.job->publish({}, FinishReason::error, error);  // the slot is lost with the runtime
        }
    }
    running_.clear();
    std::deque<std::shared_ptr<Job>> queued;
    {
        std::lock_guard lock(mutex_);
        queued.swap(waiting_);
    }
    for (auto& job : queued) job->publish({}, FinishReason::error, error);
}

void Engine::publish_load()
{
    std::lock_guard lock(mutex_);
    running_count_ = static_cast<uint32_t>(running_.size());
    metrics_.set_load(chip_, waiting_.size(), running_count_);
}

}  // namespace jal::serve
