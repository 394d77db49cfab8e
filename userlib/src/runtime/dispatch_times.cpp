#include "dispatch_times.hpp"

#include <cstring>

namespace jal::runtime::detail {

jal_dispatch_times TimesRecord::read() const
{
    jal_dispatch_times t;
    std::memcpy(&t, host, sizeof t);
    return t;
}

std::shared_ptr<TimesRecord> TimesPool::allocate()
{
    TimesRecord r;
    {
        std::lock_guard lock(mutex_);
        if (free_.empty()) {
            auto chunk = backend_.share_host_memory(kChunkBytes);
            auto* base = reinterpret_cast<jal_dispatch_times*>(chunk->data());
            const size_t n = chunk->size() / sizeof(jal_dispatch_times);
            for (size_t i = n; i-- > 0;)  // low addresses first
                free_.push_back({base + i, chunk->bus_addr() + i * sizeof(jal_dispatch_times)});
            chunks_.push_back(std::move(chunk));
        }
        r = free_.back();
        free_.pop_back();
        in_use_++;
    }
    // Cleared before the device sees it: done == 0 until the dispatch has run.
    std::memset(r.host, 0, sizeof *r.host);
    return std::shared_ptr<TimesRecord>(new TimesRecord(r), [this](TimesRecord* p) { release(p); });
}

void TimesPool::release(TimesRecord* record)
{
    {
        std::lock_guard lock(mutex_);
        free_.push_back(*record);
        in_use_--;
    }
    delete record;
}

size_t TimesPool::in_use() const
{
    std::lock_guard lock(mutex_);
    return in_use_;
}

}  // namespace jal::runtime::detail
