// The timing model's per-semaphore queue of pending signals: sorted inserts, consumption
// from the front, and the compaction of a queue that never drains, against a std::deque
// doing the same operations.
#include "emu/tile_exec/signal_queue.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <vector>

using jal::emu::exec::SignalQueue;

namespace {

std::vector<SignalQueue::Entry> contents(SignalQueue& q)
{
    return {q.begin(), q.end()};
}

void insert_sorted(SignalQueue& q, std::deque<SignalQueue::Entry>& want, double when)
{
    auto by_time = [](double w, const SignalQueue::Entry& e) { return w < e.first; };
    q.insert(std::upper_bound(q.begin(), q.end(), when, by_time), {when, 1});
    want.insert(std::upper_bound(want.begin(), want.end(), when, by_time), {when, 1});
}

}  // namespace

TEST(SignalQueue, StartsEmptyAndDrainsToEmpty)
{
    SignalQueue q;
    EXPECT_TRUE(q.empty());
    q.insert(q.end(), {1.0, 2});
    EXPECT_FALSE(q.empty());
    EXPECT_EQ(q.front().second, 2u);
    q.pop_front();
    EXPECT_TRUE(q.empty());
    EXPECT_EQ(q.begin(), q.end());
}

TEST(SignalQueue, MatchesADequeThroughInsertsPopsAndCompaction)
{
    // Two inserts for every pop: the queue never drains, so its consumed front is dropped
    // now and then (past 64 entries); a later time is sometimes inserted before earlier ones.
    SignalQueue q;
    std::deque<SignalQueue::Entry> want;
    for (int i = 0; i < 1000; ++i) {
        insert_sorted(q, want, static_cast<double>(i));
        insert_sorted(q, want, static_cast<double>((i * 37) % 1000) + 0.5);
        ASSERT_EQ(q.front(), want.front());
        q.front().second += static_cast<std::uint64_t>(i);
        want.front().second += static_cast<std::uint64_t>(i);
        q.pop_front();
        want.pop_front();
        ASSERT_EQ(contents(q), std::vector<SignalQueue::Entry>(want.begin(), want.end())) << i;
    }
    while (!want.empty()) {
        ASSERT_EQ(q.front(), want.front());
        q.pop_front();
        want.pop_front();
    }
    EXPECT_TRUE(q.empty());
}
