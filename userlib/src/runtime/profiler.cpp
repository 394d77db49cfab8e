#include "profiler.hpp"

#include <chrono>

#include <jal/error.hpp>

namespace jal::runtime::detail {

namespace {

int64_t now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// A lost interrupt costs at most this much latency in reporting.
constexpr std::chrono::milliseconds kRecheck{5};

}  // namespace

Profiler::~Profiler()
{
    stop();
}

void Profiler::set(Callback callback)
{
    if (thread_.joinable() && std::this_thread::get_id() == thread_.get_id())
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "the profiler cannot be changed from inside its own callback");
    stop();
    if (!callback) return;
    irq_.ensure_bound();
    std::lock_guard lock(mutex_);
    callback_ = std::move(callback);
    session_++;
    stopping_ = false;
    thread_ = std::thread([this, s = session_] { run(s); });
}

void Profiler::stop()
{
    {
        std::lock_guard lock(mutex_);
        if (!thread_.joinable()) return;
        stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
    std::lock_guard lock(mutex_);
    callback_ = nullptr;
    // Entries of the stopped session stay until their record is done (take_done drops
    // them then), so no record is reused while a dispatch may still write it.
    session_++;
    thread_ = std::thread();
}

bool Profiler::active() const
{
    std::lock_guard lock(mutex_);
    return callback_ != nullptr;
}

void Profiler::track(ProfiledDispatch dispatch)
{
    {
        std::lock_guard lock(mutex_);
        pending_.push_back({std::move(dispatch), session_});
    }
    cv_.notify_all();
}

std::deque<Profiler::Entry> Profiler::take_done(uint64_t session)
{
    std::lock_guard lock(mutex_);
    std::deque<Entry> done, rest;
    for (Entry& e : pending_) {
        if (!e.dispatch.times->done())
            rest.push_back(std::move(e));
        else if (e.session == session)
            done.push_back(std::move(e));
    }
    pending_.swap(rest);
    return done;
}

void Profiler::run(uint64_t session)
{
    for (;;) {
        const uint64_t seen = irq_.generation();
        for (const Entry& e : take_done(session))
            callback_(e.dispatch, e.dispatch.times->read(), now_ns());
        {
            std::unique_lock lock(mutex_);
            if (stopping_) return;
            if (pending_.empty()) {
                cv_.wait(lock, [&] { return stopping_ || !pending_.empty(); });
                continue;
            }
        }
        irq_.wait(seen, std::chrono::steady_clock::now() + kRecheck, kRecheck);
    }
}

}  // namespace jal::runtime::detail
