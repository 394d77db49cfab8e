// A shared mutex for data read on every access and written rarely (a context's page table:
// every scalar load, tile DMA and in-place MMA of a dispatch reads it; MAP and UNMAP write
// it). std::shared_mutex makes every reader update one shared counter, whose cache line
// then moves between the host CPUs running slices at each access; here each thread counts
// its readers in a line of its own, and a writer announces itself and waits for every
// thread's count to drain (the "big reader" lock of the Linux kernel's early days).
//
// A thread may take the shared lock again while it holds it, even with a writer waiting
// (as with glibc's default rwlock): its count is non-zero, so no writer can have passed
// it. Threads beyond kSlots share the fallback std::shared_mutex that writers also take.
// Meets the SharedMutex requirements (std::shared_lock, std::unique_lock).
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <shared_mutex>
#include <thread>

namespace jal::emu {

template <unsigned kSlots = 64>
requires(kSlots >= 1 && kSlots <= 64) class ReaderBiasedMutex {
public:
    void lock_shared()
    {
        const int i = thread_slot();
        if (i < 0) {
            fallback_.lock_shared();
            return;
        }
        std::atomic<std::uint32_t>& n = readers_[static_cast<unsigned>(i)].n;
        if (n.load(std::memory_order_relaxed) != 0) {  // nested: no writer is past us
            n.fetch_add(1, std::memory_order_relaxed);
            return;
        }
        for (;;) {
            // Dekker with lock(): either this thread sees the writer's flag, or the writer
            // sees this count and waits for it.
            n.fetch_add(1, std::memory_order_seq_cst);
            if (!writer_.load(std::memory_order_seq_cst)) return;
            n.fetch_sub(1, std::memory_order_release);
            fallback_.lock_shared();  // sleeps until the writer is done
            fallback_.unlock_shared();
        }
    }

    void unlock_shared()
    {
        const int i = thread_slot();
        if (i < 0)
            fallback_.unlock_shared();
        else
            readers_[static_cast<unsigned>(i)].n.fetch_sub(1, std::memory_order_release);
    }

    void lock()
    {
        fallback_.lock();  // one writer at a time; holds off the fallback's readers
        writer_.store(true, std::memory_order_seq_cst);
        // A reader may hold it for a while (an MMA reading a weight tile in place): after a
        // few turns the writer sleeps between looks rather than take a CPU from the slices.
        for (const Slot& s : readers_)
            for (int turn = 0; s.n.load(std::memory_order_seq_cst) != 0; ++turn)
                if (turn < 64)
                    std::this_thread::yield();
                else
                    std::this_thread::sleep_for(std::chrono::microseconds(20));
    }

    void unlock()
    {
        writer_.store(false, std::memory_order_release);
        fallback_.unlock();
    }

    // A writer holds the lock or waits for readers to leave (tests).
    bool writer_pending() const { return writer_.load(std::memory_order_acquire); }

    // The calling thread's reader slot in every mutex of this size, or -1: it reads through
    // the fallback. A slot is given back when its thread exits.
    static int thread_slot()
    {
        thread_local const Holder mine;
        return mine.i;
    }

private:
    struct alignas(64) Slot {
        std::atomic<std::uint32_t> n{0};  // shared locks its thread holds
    };

    // A free bit of `taken` for the thread's life (a long-running emulator starts and ends
    // a thread a queue, and the slots must outlast that).
    struct Holder {
        static inline std::atomic<std::uint64_t> taken{0};
        int i = -1;
        Holder()
        {
            std::uint64_t t = taken.load(std::memory_order_relaxed);
            for (;;) {
                const std::uint64_t free = ~t & kAll;
                if (!free) return;
                const std::uint64_t bit = free & -free;
                if (taken.compare_exchange_weak(t, t | bit, std::memory_order_acq_rel)) {
                    i = std::countr_zero(bit);
                    return;
                }
            }
        }
        ~Holder()
        {
            if (i >= 0) taken.fetch_and(~(std::uint64_t{1} << i), std::memory_order_acq_rel);
        }
    };
    static constexpr std::uint64_t kAll =
        kSlots >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << kSlots) - 1;
    std::array<Slot, kSlots> readers_;
    std::atomic<bool> writer_{false};
    std::shared_mutex fallback_;
};

}  // namespace jal::emu
