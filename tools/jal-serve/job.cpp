#include "job.hpp"

namespace jal::serve {

const char* finish_reason_name(FinishReason r)
{
    switch (r) {
    case FinishReason::none:
        return "";
    case FinishReason::length:
        return "length";
    case FinishReason::stop:
        return "stop";
    case FinishReason::cancelled:
        return "cancelled";
    case FinishReason::error:
        return "error";
    }
    return "";
}

void Job::set_notify(std::function<void()> notify)
{
    std::lock_guard lock(mutex_);
    notify_ = std::move(notify);
}

Job::Update Job::take()
{
    std::lock_guard lock(mutex_);
    Update u;
    u.tokens.swap(pending_);
    u.finish = finish_;
    u.error = error_;
    u.completion_tokens = completion_tokens_;
    return u;
}

void Job::cancel()
{
    std::lock_guard lock(mutex_);
    cancelled_ = true;
}

bool Job::cancelled() const
{
    std::lock_guard lock(mutex_);
    return cancelled_;
}

bool Job::finished() const
{
    std::lock_guard lock(mutex_);
    return finish_ != FinishReason::none;
}

void Job::publish(const std::vector<int32_t>& tokens, FinishReason finish, std::string error,
                  bool stop_id)
{
    std::function<void()> notify;
    {
        std::lock_guard lock(mutex_);
        pending_.insert(pending_.end(), tokens.begin(), tokens.end());
        completion_tokens_ += static_cast<uint32_t>(tokens.size()) + (stop_id ? 1 : 0);
        if (finish_ == FinishReason::none) {
            finish_ = finish;
            error_ = std::move(error);
        }
        notify = notify_;
    }
    // Outside the lock: the callback may take() from another thread at once.
    if (notify) notify();
}

}  // namespace jal::serve
