// Host threads that run slices as cooperative tasks: a task runs until its slice ends,
// faults, blocks or yields, and is posted again when it can go on. One pool is shared by
// every dispatch of the process (std::thread::hardware_concurrency threads), reused across
// dispatches; tests make their own with a chosen size.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace jal::emu::exec {

class WorkerPool {
public:
    explicit WorkerPool(unsigned threads);
    ~WorkerPool();
    WorkerPool(const WorkerPool&) = delete;
    WorkerPool& operator=(const WorkerPool&) = delete;

    void post(std::function<void()> task);
    unsigned size() const { return static_cast<unsigned>(threads_.size()); }
    // Tasks posted and not yet started (a hint: it may change at once). A task that could
    // go on either way keeps its thread while nothing else waits for one.
    std::size_t queued() const { return queued_.load(std::memory_order_relaxed); }

    static WorkerPool& shared();

private:
    void main();

    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> tasks_;
    std::atomic<std::size_t> queued_{0};  // tasks_.size(), readable without m_
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace jal::emu::exec
