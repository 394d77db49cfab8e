// ReaderBiasedMutex: writers exclude readers and each other, a reader may nest while a
// writer waits, and threads beyond the per-thread slots take the fallback path.
#include "emu/util/reader_biased_mutex.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <shared_mutex>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

using jal::emu::ReaderBiasedMutex;

// Readers check that a writer's two stores are never seen apart; writers check that no
// reader and no other writer is inside: `readers` readers and two writers of writes each.
// A writer waits for every reader to leave, preempted ones too (on two host CPUs that can
// be a scheduler tick), and glibc's rwlock (the fallback) lets readers go first: a few
// hundred writes keep the test short.
template <class Mutex>
void readers_and_writers_exclude(unsigned readers, int writes)
{
    Mutex m;
    std::uint64_t a = 0, b = 0;
    std::atomic<int> inside{0};
    std::atomic<bool> torn{false}, shared_with_writer{false};
    std::atomic<bool> stop{false};
    std::vector<std::thread> threads;
    for (unsigned r = 0; r < readers; ++r)
        threads.emplace_back([&] {
            while (!stop.load()) {
                std::shared_lock lock(m);
                inside.fetch_add(1);
                const std::uint64_t seen = a;
                std::this_thread::yield();  // a long critical section: a writer must wait
                if (seen != b) torn = true;
                inside.fetch_sub(1);
            }
        });
    std::vector<std::thread> writers;
    for (int w = 0; w < 2; ++w)
        writers.emplace_back([&] {
            for (int i = 0; i < writes; ++i) {
                std::unique_lock lock(m);
                if (inside.load() != 0) shared_with_writer = true;
                inside.fetch_add(1000);
                ++a;
                std::this_thread::yield();
                ++b;
                inside.fetch_sub(1000);
            }
        });
    for (auto& t : writers) t.join();
    stop = true;
    for (auto& t : threads) t.join();
    EXPECT_FALSE(torn.load()) << "a reader saw a writer's stores apart";
    EXPECT_FALSE(shared_with_writer.load()) << "a writer ran beside a reader or a writer";
    EXPECT_EQ(a, 2u * static_cast<unsigned>(writes));
    EXPECT_EQ(b, a);
}

TEST(ReaderBiasedMutex, WritersExcludeReadersAndEachOther)
{
    readers_and_writers_exclude<ReaderBiasedMutex<>>(2, 200);
}

TEST(ReaderBiasedMutex, ThreadsBeyondTheSlotsUseTheFallback)
{
    // One slot, two readers: the second takes the fallback std::shared_mutex.
    readers_and_writers_exclude<ReaderBiasedMutex<1>>(2, 20);
}

TEST(ReaderBiasedMutex, AReaderMayNestWhileAWriterWaits)
{
    ReaderBiasedMutex<> m;
    std::atomic<bool> written{false};
    m.lock_shared();
    std::thread writer([&] {
        std::unique_lock lock(m);
        written = true;
    });
    while (!m.writer_pending()) std::this_thread::yield();
    // The writer has announced itself and waits for this thread: the nested read must not
    // wait for it.
    m.lock_shared();
    EXPECT_FALSE(written.load());
    m.unlock_shared();
    EXPECT_FALSE(written.load()) << "the outer shared lock is still held";
    m.unlock_shared();
    writer.join();
    EXPECT_TRUE(written.load());
}

TEST(ReaderBiasedMutex, AnEndedThreadsSlotIsTakenAgain)
{
    using Two = ReaderBiasedMutex<2>;
    std::vector<int> slots;
    for (int i = 0; i < 20; ++i) {  // one after another: each finds the last one's slot free
        std::thread t([&] { slots.push_back(Two::thread_slot()); });
        t.join();
    }
    for (int s : slots) EXPECT_GE(s, 0);
    // Two living threads hold both slots; a third reads through the fallback.
    std::atomic<int> holding{0};
    std::atomic<bool> release{false};
    std::vector<std::thread> holders;
    std::vector<int> held(2, -1);
    for (int i = 0; i < 2; ++i)
        holders.emplace_back([&, i] {
            held[static_cast<size_t>(i)] = Two::thread_slot();
            holding.fetch_add(1);
            while (!release.load()) std::this_thread::yield();
        });
    while (holding.load() != 2) std::this_thread::yield();
    int third = 0;
    std::thread([&] { third = Two::thread_slot(); }).join();
    release = true;
    for (auto& t : holders) t.join();
    EXPECT_NE(held[0], held[1]);
    EXPECT_GE(std::min(held[0], held[1]), 0);
    EXPECT_EQ(third, -1);
}

}  // namespace
