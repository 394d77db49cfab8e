// One semaphore's pending signals in the timing model: (completion time, count), sorted by
// time, consumed from the front. A vector read from a moving head rather than a std::deque:
// a SliceTiming is built for every slice of every dispatch, and a deque allocates two
// blocks as soon as it exists (sixteen semaphores a slice, 64 slices a dispatch), where
// this allocates only once a semaphore is signalled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace jal::emu::exec {

class SignalQueue {
public:
    using Entry = std::pair<double, std::uint64_t>;
    using iterator = std::vector<Entry>::iterator;

    iterator begin() { return v_.begin() + static_cast<std::ptrdiff_t>(head_); }
    iterator end() { return v_.end(); }
    bool empty() const { return head_ == v_.size(); }
    Entry& front() { return v_[head_]; }
    void insert(iterator at, const Entry& e) { v_.insert(at, e); }
    void clear()  // every pending signal dropped (STAGE)
    {
        v_.clear();
        head_ = 0;
    }
    void pop_front()
    {
        ++head_;
        if (head_ == v_.size()) {
            v_.clear();
            head_ = 0;
        } else if (head_ >= kCompactAt && 2 * head_ >= v_.size()) {
            // A queue that never drains: drop the consumed entries now and then.
            v_.erase(v_.begin(), begin());
            head_ = 0;
        }
    }

private:
    static constexpr std::size_t kCompactAt = 64;
    std::vector<Entry> v_;
    std::size_t head_ = 0;
};

}  // namespace jal::emu::exec
