// The profiler of one device (jal_device_set_profiler): while a callback is set, every
// dispatch submitted through jal_queue_dispatch carries a times record (dispatch_times.hpp)
// and raises its queue's interrupt; a library thread sleeps on the interrupts, and calls
// the callback once for each dispatch the device has finished, with the device's modelled
// start and end and the host's submit and completion times. Dispatches of one queue are
// reported in submission order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "dispatch_times.hpp"
#include "irq_hub.hpp"

namespace jal::runtime::detail {

struct ProfiledDispatch {
    std::shared_ptr<TimesRecord> times;
    uint32_t queue_id = 0;
    uint64_t packet_index = 0;
    uint64_t code_object = 0;
    uint64_t slice_mask = 0;
    int64_t host_submit_ns = 0;  // steady_clock (CLOCK_MONOTONIC)
};

class Profiler {
public:
    using Callback = std::function<void(const ProfiledDispatch& dispatch,
                                        const jal_dispatch_times& times, int64_t host_complete_ns)>;

    explicit Profiler(IrqHub& irq) : irq_(irq) {}
    ~Profiler();  // stops the thread
    Profiler(const Profiler&) = delete;
    Profiler& operator=(const Profiler&) = delete;

    // Replaces the callback; empty stops profiling. Returns once the previous callback
    // has returned for the last time. Refused (INVALID_FIELD) from inside a callback.
    void set(Callback callback);
    // Whether dispatches should be tracked now (they may be submitted, then tracked).
    bool active() const;
    // A dispatch submitted while active(); reported once its record is done.
    void track(ProfiledDispatch dispatch);

private:
    struct Entry {
        ProfiledDispatch dispatch;
        uint64_t session;  // of the callback it is for
    };
    void run(uint64_t session);
    // Takes the finished entries out of pending_ (in order); drops other sessions' ones.
    std::deque<Entry> take_done(uint64_t session);
    void stop();

    IrqHub& irq_;
    mutable std::mutex mutex_;
    std::condition_variable cv_;
    std::deque<Entry> pending_;
    Callback callback_;
    uint64_t session_ = 0;  // 0: not profiling
    bool stopping_ = false;
    std::thread thread_;
};

}  // namespace jal::runtime::detail
