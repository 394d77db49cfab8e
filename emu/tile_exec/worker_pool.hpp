// Host threads that run slices as cooperative tasks: a task runs until its slice ends,
// faults, blocks or yields, and is posted again when it can go on. One pool is shared by
// every dispatch of the process (std::thread::hardware_concurrency threads), reused across
// dispatches; tests make their own with a chosen size.
#pragma once

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

    static WorkerPool& shared();

private:
    void main();

    std::mutex m_;
    std::condition_variable cv_;
    std::deque<std::function<void()>> tasks_;
    bool stop_ = false;
    std::vector<std::thread> threads_;
};

}  // namespace jal::emu::exec
