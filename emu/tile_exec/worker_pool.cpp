#include "emu/tile_exec/worker_pool.hpp"

#include <algorithm>

namespace jal::emu::exec {

WorkerPool::WorkerPool(unsigned threads)
{
    threads = std::max(1u, threads);
    for (unsigned i = 0; i < threads; ++i) threads_.emplace_back([this] { main(); });
}

WorkerPool::~WorkerPool()
{
    {
        std::lock_guard lock(m_);
        stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
}

void WorkerPool::post(std::function<void()> task)
{
    {
        std::lock_guard lock(m_);
        tasks_.push_back(std::move(task));
        queued_.store(tasks_.size(), std::memory_order_relaxed);
    }
    cv_.notify_one();
}

void WorkerPool::main()
{
    for (;;) {
        std::function<void()> task;
        {
            std::unique_lock lock(m_);
            cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
            if (tasks_.empty()) return;  // stopping, and nothing left
            task = std::move(tasks_.front());
            tasks_.pop_front();
            queued_.store(tasks_.size(), std::memory_order_relaxed);
        }
        task();
    }
}

WorkerPool& WorkerPool::shared()
{
    static WorkerPool pool(std::max(1u, std::thread::hardware_concurrency()));
    return pool;
}

}  // namespace jal::emu::exec
