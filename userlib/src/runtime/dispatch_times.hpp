// Device-side times of dispatches (struct jal_dispatch_times, queue.h, interface 1.6): the
// records the device writes when a DISPATCH packet names one, in shared host memory, and
// their owners. A record is shared: by the timestamped signal that completes the dispatch
// (jal_signal_times) and by the profiler waiting to report it; it returns to the pool when
// both are done with it.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <jal/hw/queue.h>

#include "../backend/backend.hpp"

namespace jal::runtime::detail {

struct TimesRecord {
    jal_dispatch_times* host = nullptr;
    uint64_t bus_addr = 0;

    // Whether the device has written it (acquire: the fields are then complete).
    bool done() const { return __atomic_load_n(&host->done, __ATOMIC_ACQUIRE) != 0; }
    jal_dispatch_times read() const;  // after done()
};

// Hands out cleared records from 64 KiB chunks of shared host memory. Records must be
// released before the pool is destroyed (the device core owns it and outlives them).
class TimesPool {
public:
    explicit TimesPool(backend::Backend& backend) : backend_(backend) {}

    std::shared_ptr<TimesRecord> allocate();
    size_t in_use() const;

private:
    static constexpr size_t kChunkBytes = 64 * 1024;
    void release(TimesRecord* record);

    backend::Backend& backend_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<backend::HostMemory>> chunks_;
    std::vector<TimesRecord> free_;
    size_t in_use_ = 0;
};

}  // namespace jal::runtime::detail
