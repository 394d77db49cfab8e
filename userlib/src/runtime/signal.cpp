#include "signal.hpp"

#include <jal/error.hpp>

#include "cpu_relax.hpp"

namespace jal::runtime::detail {

SignalPool::Slot SignalPool::allocate()
{
    std::lock_guard lock(mutex_);
    if (free_.empty()) {
        auto chunk = backend_.share_host_memory(kChunkBytes);
        auto* base = reinterpret_cast<jal_signal*>(chunk->data());
        size_t n = chunk->size() / sizeof(jal_signal);
        // Hand out low addresses first.
        for (size_t i = n; i-- > 0;)
            free_.push_back(Slot{base + i, chunk->bus_addr() + i * sizeof(jal_signal)});
        chunks_.push_back(std::move(chunk));
    }
    Slot slot = free_.back();
    free_.pop_back();
    in_use_++;
    return slot;
}

void SignalPool::release(Slot slot)
{
    std::lock_guard lock(mutex_);
    free_.push_back(slot);
    in_use_--;
}

size_t SignalPool::in_use() const
{
    std::lock_guard lock(mutex_);
    return in_use_;
}

SignalObservation load_signal(const jal_signal* signal)
{
    SignalObservation out;
    out.value = std::atomic_ref<const int64_t>(signal->value).load(std::memory_order_acquire);
    out.status = static_cast<jal_status>(
        std::atomic_ref<const uint32_t>(signal->status).load(std::memory_order_relaxed));
    return out;
}

void store_signal(jal_signal* signal, int64_t value, jal_status status)
{
    std::atomic_ref<uint32_t>(signal->status).store(status, std::memory_order_relaxed);
    std::atomic_ref<int64_t>(signal->value).store(value, std::memory_order_release);
}

namespace {

using clock = std::chrono::steady_clock;

clock::time_point deadline_after(std::chrono::nanoseconds timeout)
{
    auto now = clock::now();
    if (timeout >= clock::time_point::max() - now) return clock::time_point::max();
    return now + std::chrono::duration_cast<clock::duration>(timeout);
}

bool check(const jal_signal* signal, const WaitOptions& o, SignalObservation& out)
{
    out = load_signal(signal);
    out.satisfied = condition_holds(o.condition, out.value, o.compare);
    return out.satisfied;
}

// Spins until the condition holds or `until`; reads the clock only every few iterations.
bool spin(const jal_signal* signal, const WaitOptions& o, clock::time_point until,
          SignalObservation& out)
{
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (check(signal, o, out)) return true;
            cpu_relax();
        }
        if (clock::now() >= until) return check(signal, o, out);
    }
}

}  // namespace

SignalObservation wait_signal(const jal_signal* signal, const WaitOptions& o, IrqHub* irq,
                              const std::function<void()>& still_valid)
{
    SignalObservation out;
    auto deadline = deadline_after(o.timeout);
    auto slice_end = [&] { return std::min(deadline, deadline_after(kValidityRecheck)); };
    if (o.mode == WaitMode::poll) {
        while (!spin(signal, o, slice_end(), out) && clock::now() < deadline)
            if (still_valid) still_valid();
        return out;
    }
    if (!irq)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "interrupt wait without a device to take interrupts from");
    if (o.mode == WaitMode::hybrid) {
        if (spin(signal, o, std::min(deadline, deadline_after(o.spin)), out)) return out;
    }
    for (;;) {
        uint64_t seen = irq->generation();
        if (check(signal, o, out) || clock::now() >= deadline) return out;
        irq->wait(seen, deadline);
        if (still_valid) still_valid();
    }
}

}  // namespace jal::runtime::detail
