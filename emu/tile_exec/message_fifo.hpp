// The collective network's FIFO from one slice to another: one producer (the sending
// slice) and one consumer (the receiving slice), each running on whichever host thread
// the scheduler gives it, never on two at once. A ring of a few messages without locks (a
// dispatch exchanges thousands, and a lock each moved its cache line between the host's
// CPUs), and a locked overflow for a sender that runs far ahead of its receiver.
#pragma once

#include "emu/tile_exec/fabric.hpp"

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>

namespace jal::emu::exec {

class MessageFifo {
public:
    // Producer only.
    void push(Message&& m)
    {
        const std::uint64_t t = tail_.load(std::memory_order_relaxed);
        // Once a message overflows, the ring takes no more until the overflow is drained:
        // it holds only messages older than the overflow's.
        if (overflowed_.load(std::memory_order_acquire) == 0 &&
            t - head_.load(std::memory_order_acquire) < kRing) {
            ring_[t % kRing] = std::move(m);
            tail_.store(t + 1, std::memory_order_seq_cst);  // seq_cst: see Run::send's wake
            return;
        }
        std::lock_guard lock(m_);
        overflow_.push_back(std::move(m));
        overflowed_.fetch_add(1, std::memory_order_seq_cst);
    }

    // Consumer only: the oldest message, or false if there is none.
    bool pop(Message& out)
    {
        const std::uint64_t h = head_.load(std::memory_order_relaxed);
        if (h == tail_.load(std::memory_order_acquire)) {
            if (overflowed_.load(std::memory_order_acquire) == 0) return false;
            // Between the look at tail and this one the producer may have filled the ring and
            // overflowed: those ring messages are older than the overflow's, so look again
            // (the overflow's count, read with acquire, makes its ring writes visible).
            if (h == tail_.load(std::memory_order_acquire)) return pop_overflow(out);
        }
        out = std::move(ring_[h % kRing]);
        head_.store(h + 1, std::memory_order_release);
        return true;
    }

    // Any thread; exact when neither end moves meanwhile.
    bool empty() const
    {
        return head_.load(std::memory_order_seq_cst) == tail_.load(std::memory_order_seq_cst) &&
               overflowed_.load(std::memory_order_seq_cst) == 0;
    }

private:
    bool pop_overflow(Message& out)
    {
        std::lock_guard lock(m_);
        out = std::move(overflow_.front());
        overflow_.pop_front();
        overflowed_.fetch_sub(1, std::memory_order_release);
        return true;
    }

    static constexpr std::uint64_t kRing = 8;
    std::array<Message, kRing> ring_;
    alignas(64) std::atomic<std::uint64_t> head_{0};  // consumer's
    alignas(64) std::atomic<std::uint64_t> tail_{0};  // producer's
    std::atomic<std::uint32_t> overflowed_{0};        // messages in overflow_
    std::mutex m_;
    std::deque<Message> overflow_;
};

}  // namespace jal::emu::exec
