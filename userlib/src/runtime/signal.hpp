// 64-bit memory signals (struct jal_signal, queue.h) in host memory the device can write,
// and the three ways of waiting for one.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include <jal/hw/queue.h>
#include <jal/hw/status.h>

#include "../backend/backend.hpp"
#include "irq_hub.hpp"

namespace jal::runtime::detail {

// Hands out 16-byte signal slots from shared host memory (64 KiB chunks).
class SignalPool {
public:
    explicit SignalPool(backend::Backend& backend) : backend_(backend) {}

    struct Slot {
        jal_signal* host = nullptr;
        uint64_t bus_addr = 0;
    };
    Slot allocate();
    void release(Slot slot);
    size_t in_use() const;

private:
    static constexpr size_t kChunkBytes = 64 * 1024;

    backend::Backend& backend_;
    mutable std::mutex mutex_;
    std::vector<std::unique_ptr<backend::HostMemory>> chunks_;
    std::vector<Slot> free_;
    size_t in_use_ = 0;
};

enum class SignalCondition : uint32_t { eq = 0, ne = 1, lt = 2, gte = 3 };
enum class WaitMode : uint32_t { poll = 1, interrupt = 2, hybrid = 3 };

struct SignalObservation {
    int64_t value = 0;
    jal_status status = JAL_STATUS_OK;  // of the packet that last completed the signal
    bool satisfied = false;             // false: the wait timed out
};

inline bool condition_holds(SignalCondition cond, int64_t value, int64_t compare)
{
    switch (cond) {
    case SignalCondition::eq:
        return value == compare;
    case SignalCondition::ne:
        return value != compare;
    case SignalCondition::lt:
        return value < compare;
    case SignalCondition::gte:
        return value >= compare;
    }
    return false;
}

// Reads value (acquire), then status, as queue.h prescribes.
SignalObservation load_signal(const jal_signal* signal);
// Status first, then value (release): what a waiter reads is consistent.
void store_signal(jal_signal* signal, int64_t value, jal_status status = JAL_STATUS_OK);

struct WaitOptions {
    SignalCondition condition = SignalCondition::eq;
    int64_t compare = 0;
    std::chrono::nanoseconds timeout = std::chrono::nanoseconds::max();
    WaitMode mode = WaitMode::hybrid;
    std::chrono::nanoseconds spin = std::chrono::microseconds(50);  // hybrid: spin this long first
};

// Waits until the condition holds or the timeout passes. Interrupt and hybrid modes need
// `irq` (the signal's device) and a signal whose completions raise an interrupt.
// `still_valid` (may be empty) is called at least every kValidityRecheck (and after every
// wake-up) while the condition does not hold; it throws to end the wait (device reset).
inline constexpr std::chrono::milliseconds kValidityRecheck{10};
SignalObservation wait_signal(const jal_signal* signal, const WaitOptions& options, IrqHub* irq,
                              const std::function<void()>& still_valid = {});

}  // namespace jal::runtime::detail
