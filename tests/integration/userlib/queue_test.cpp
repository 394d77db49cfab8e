// User queues through a real jal-emu: copy integrity, ordering within a queue and across
// queues joined by barriers, several producers, back-pressure, faults, context isolation.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include "common/thread_state.hpp"
#include "runtime_fixture.hpp"

namespace {

using namespace std::chrono_literals;
using namespace jal::runtime;
using jal::test::first_difference;
using jal::test::random_bytes;
using jal::test::RuntimeTest;

constexpr uint64_t kPage = JAL_PAGE_SIZE;
constexpr auto kWait = std::chrono::seconds(60);  // generous: a loaded machine is slow, never wrong

class QueueTest : public RuntimeTest {
protected:
    // Waits for `s` to reach 0 and returns the completing packet's status.
    jal_status finish(const Signal& s, jal_wait_mode mode = JAL_WAIT_HYBRID)
    {
        auto r = s.wait_zero(kWait, mode);
        EXPECT_TRUE(r.satisfied) << "signal still " << r.value;
        return r.status;
    }
};

struct CopyCase {
    jal_placement placement;
    uint64_t mask;
};

TEST_F(QueueTest, CopiesKeepEveryByteAcrossSizesOffsetsAndPlacements)
{
    Context ctx(dev());
    Queue q(ctx, 256);
    const CopyCase placements[] = {{JAL_PLACE_SLICE, 1ull << 3},
                                   {JAL_PLACE_INTERLEAVED, 0b1111'0000},
                                   {JAL_PLACE_REPLICATED, (1ull << 1) | (1ull << 60)}};
    const size_t sizes[] = {1, 63, 4096, 4097, (1u << 20) + 13, 5u << 20};
    const uint64_t offsets[] = {0, 1, 4095, kPage - 7};
    const size_t kMax = (5u << 20) + 4096;
    HostBuffer src(dev(), kMax), back(dev(), kMax);
    Signal s(dev(), 0);
    uint64_t seed = 1;
    for (auto& pc : placements) {
        Memory a(ctx, 8 * kPage, pc.placement, pc.mask);
        Memory b(ctx, 8 * kPage, pc.placement, pc.mask);
        for (size_t size : sizes) {
            for (uint64_t off : offsets) {
                auto data = random_bytes(size, seed++);
                std::memcpy(src.data() + 3, data.data(), size);  // odd host offset too
                std::memset(back.data(), 0, size + 16);
                // host -> a, a -> b (different offset), b -> host
                s.store(3);
                q.copy_to_device(a.va() + off, src, 3, size, &s);
                q.copy(JAL_COPY_D2D, b.va() + off + 5, a.va() + off, size, &s);
                q.copy_to_host(back, 8, b.va() + off + 5, size, &s);
                ASSERT_EQ(finish(s), JAL_STATUS_OK);
                ASSERT_EQ(s.value(), 0);
                ASSERT_EQ(first_difference(back.data() + 8, data.data(), size), -1)
                    << "placement " << pc.placement << " size " << size << " offset " << off;
                // Nothing written around the destination range.
                for (int i = 0; i < 8; i++) ASSERT_EQ(back.data()[i], std::byte{0});
                ASSERT_EQ(back.data()[8 + size], std::byte{0});
            }
        }
    }
}

TEST_F(QueueTest, ReplicatedWritesReachEveryReplica)
{
    Context ctx(dev());
    Queue q(ctx);
    Memory r(ctx, kPage, JAL_PLACE_REPLICATED, 0b111);
    Memory single(ctx, kPage, JAL_PLACE_SLICE, 1ull << 8);
    auto data = random_bytes(kPage, 42);
    HostBuffer h(dev(), kPage), back(dev(), kPage);
    std::memcpy(h.data(), data.data(), kPage);
    Signal s(dev(), 3);
    q.copy_to_device(r.va(), h, 0, kPage, &s);
    q.copy(JAL_COPY_D2D, single.va(), r.va(), kPage, &s);
    q.copy_to_host(back, 0, single.va(), kPage, &s);
    ASSERT_EQ(finish(s), JAL_STATUS_OK);
    EXPECT_EQ(first_difference(back.data(), data.data(), kPage), -1);
}

TEST_F(QueueTest, PacketsOfOneQueueExecuteInOrder)
{
    Context ctx(dev());
    Queue q(ctx, 64);
    Memory m(ctx, kPage, JAL_PLACE_SLICE, 1);
    constexpr int kWrites = 40;
    constexpr size_t kChunk = 64 * 1024;
    HostBuffer h(dev(), kWrites * kChunk), back(dev(), kChunk);
    for (int i = 0; i < kWrites; i++) {
        auto d = random_bytes(kChunk, 100 + i);
        std::memcpy(h.data() + i * kChunk, d.data(), kChunk);
    }
    // Every copy lands on the same range; only the last one may be seen.
    Signal done(dev(), 1);
    for (int i = 0; i < kWrites; i++) q.copy_to_device(m.va(), h, i * kChunk, kChunk);
    q.copy_to_host(back, 0, m.va(), kChunk, &done);
    ASSERT_EQ(finish(done), JAL_STATUS_OK);
    EXPECT_EQ(first_difference(back.data(), h.data() + (kWrites - 1) * kChunk, kChunk), -1);

    // Signal packets too: SET 1, 2, ... leaves the last value.
    Signal target(dev(), 0), fin(dev(), 1);
    for (int i = 1; i <= 100; i++) q.signal(target, JAL_SIGNAL_SET, i);
    q.nop(&fin);
    ASSERT_EQ(finish(fin), JAL_STATUS_OK);
    EXPECT_EQ(target.value(), 100);
}

TEST_F(QueueTest, BarriersOrderPacketsAcrossQueues)
{
    Context ctx(dev());
    Queue producer(ctx), consumer(ctx);
    Memory m(ctx, 16 * kPage, JAL_PLACE_INTERLEAVED, 0xff);
    const size_t kBytes = 32u << 20;
    auto data = random_bytes(kBytes, 7);
    HostBuffer h(dev(), kBytes), back(dev(), kBytes);
    std::memcpy(h.data(), data.data(), kBytes);
    Signal written(dev(), 1), read_back(dev(), 1);
    // The consumer's barrier goes in first; its copy must still see the producer's data.
    Signal* deps[] = {&written};
    consumer.barrier_and(std::span<const Signal* const>(deps, 1));
    consumer.copy_to_host(back, 0, m.va(), kBytes, &read_back);
    producer.copy_to_device(m.va(), h, 0, kBytes, &written);
    ASSERT_EQ(finish(read_back), JAL_STATUS_OK);
    EXPECT_EQ(written.value(), 0);
    EXPECT_EQ(first_difference(back.data(), data.data(), kBytes), -1);
}

TEST_F(QueueTest, ABarrierHoldsItsQueueUntilTheHostSignals)
{
    Context ctx(dev());
    Queue q(ctx);
    Signal gate(dev(), 1), after(dev(), 1);
    Signal* deps[] = {&gate};
    q.barrier_and(std::span<const Signal* const>(deps, 1));
    q.nop(&after);
    // Until the device has taken the doorbell covering both packets (its engine looks at
    // the barrier in the same pass).
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while (q.status().write_index < 2 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    EXPECT_EQ(q.status().write_index, 2u);
    EXPECT_EQ(q.status().read_index, 0u) << "the barrier retired while its dependency waits";
    EXPECT_EQ(after.value(), 1) << "a packet behind an unsatisfied barrier ran";
    gate.store(0);
    EXPECT_EQ(finish(after), JAL_STATUS_OK);
}

TEST_F(QueueTest, SeveralProducersLoseAndDuplicateNoPacket)
{
    Context ctx(dev());
    Queue q(ctx, 256);
    constexpr int kThreads = 4;
    constexpr int64_t kEach = 5000;
    Signal all(dev(), kThreads * kEach);
    std::vector<std::unique_ptr<Signal>> mine;
    for (int t = 0; t < kThreads; t++) mine.push_back(std::make_unique<Signal>(dev(), kEach));
    std::vector<std::thread> producers;
    for (int t = 0; t < kThreads; t++)
        producers.emplace_back([&, t] {
            for (int64_t i = 0; i < kEach; i++) {
                q.nop(&all);
                q.signal(*mine[t], JAL_SIGNAL_SUB, 1);
            }
        });
    for (auto& p : producers) p.join();
    ASSERT_EQ(finish(all), JAL_STATUS_OK);
    Signal fin(dev(), 1);
    q.nop(&fin);
    ASSERT_EQ(finish(fin), JAL_STATUS_OK);
    // Exactly once each: a duplicate would take a counter below zero.
    EXPECT_EQ(all.value(), 0);
    for (int t = 0; t < kThreads; t++) EXPECT_EQ(mine[t]->value(), 0) << "producer " << t;
    auto st = q.status();
    EXPECT_EQ(st.read_index, uint64_t{2 * kThreads * kEach + 1});
    EXPECT_EQ(st.errors, 0u);
}

TEST_F(QueueTest, AFullQueueHoldsProducersBackUntilTheDeviceCatchesUp)
{
    Context ctx(dev());
    Queue q(ctx, 16);
    Signal gate(dev(), 1), count(dev(), 200);
    Signal* deps[] = {&gate};
    q.barrier_and(std::span<const Signal* const>(deps, 1));
    std::atomic<int> submitted{0};
    std::atomic<pid_t> producer_tid{0};
    std::thread producer([&] {
        producer_tid = ::gettid();
        for (int i = 0; i < 200; i++) {
            q.nop(&count);
            submitted++;
        }
    });
    // Until the producer has submitted what fits and backs off (it spins, yields, then
    // sleeps between looks for room).
    const auto deadline = std::chrono::steady_clock::now() + 30s;
    while ((producer_tid.load() == 0 || submitted.load() < 15) &&
           std::chrono::steady_clock::now() < deadline)
        std::this_thread::yield();
    jal::test::wait_until_blocked(producer_tid, jal::test::kSleepCalls);
    // The ring holds 16: the barrier and 15 no-ops; the producer waits for room.
    EXPECT_EQ(submitted.load(), 15);
    EXPECT_EQ(count.value(), 200);
    gate.store(0);
    producer.join();
    EXPECT_EQ(finish(count), JAL_STATUS_OK);
    EXPECT_EQ(submitted.load(), 200);
}

TEST_F(QueueTest, ASubmissionThatGivesUpIsRepairedByAReset)
{
    Context ctx(dev());
    Queue q(ctx, 16);
    Signal gate(dev(), 1), barrier_done(dev(), 1), count(dev(), 15);
    Signal* deps[] = {&gate};
    q.barrier_and(std::span<const Signal* const>(deps, 1), &barrier_done);
    for (int i = 0; i < 15; i++) q.nop(&count);
    q.set_submit_timeout(20ms);
    try {
        q.nop();
        FAIL() << "a 17th packet fit a 16-packet ring";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_TIMEOUT);
    }
    q.reset();
    // What was waiting was dropped and its signals told so.
    EXPECT_EQ(finish(barrier_done), JAL_STATUS_ABORTED);
    EXPECT_EQ(finish(count), JAL_STATUS_ABORTED);
    Signal after(dev(), 1);
    q.nop(&after);
    EXPECT_EQ(finish(after), JAL_STATUS_OK);
    auto st = q.status();
    EXPECT_EQ(st.state, uint32_t{JAL_QUEUE_ACTIVE});
    EXPECT_EQ(st.errors, 0u);
}

TEST_F(QueueTest, FaultsCompleteTheirPacketWithTheirStatusAndTheQueueGoesOn)
{
    Context ctx(dev());
    Queue q(ctx);
    Memory m(ctx, kPage, JAL_PLACE_SLICE, 1);
    Memory freed(ctx, kPage, JAL_PLACE_SLICE, 1);
    uint64_t freed_va = freed.va();
    freed.free();
    HostBuffer h(dev(), 1 << 20);
    Signal s(dev(), 1);
    uint64_t s_bus;
    jal_signal_bus_addr(s.get(), &s_bus);

    auto raw = [&](uint8_t type, uint8_t flags, uint16_t arg,
                   std::initializer_list<uint64_t> words) {
        uint64_t p[8] = {};
        jal_packet_header hdr{type, flags, arg};
        std::memcpy(p, &hdr, sizeof hdr);
        size_t i = 1;
        for (uint64_t w : words) p[i++] = w;
        p[7] = s_bus;
        return std::vector<uint64_t>(p, p + 8);
    };
    struct Case {
        const char* what;
        std::function<void()> submit;
        jal_status expected;
    };
    const uint64_t unmapped_bus = 0x42'0000'0000ull;
    std::vector<Case> cases = {
        {"unknown packet type", [&] { q.submit_raw(raw(0x33, 0, 0, {}).data()); },
         JAL_STATUS_INVALID_OPCODE},
        {"no-op with an argument", [&] { q.submit_raw(raw(JAL_PACKET_NOP, 0, 1, {}).data()); },
         JAL_STATUS_INVALID_FIELD},
        {"unknown flag", [&] { q.submit_raw(raw(JAL_PACKET_NOP, 0x80, 0, {}).data()); },
         JAL_STATUS_INVALID_FIELD},
        {"copy direction 9",
         [&] { q.copy(static_cast<jal_copy_dir>(9), m.va(), h.bus_addr(), 64, &s); },
         JAL_STATUS_INVALID_FIELD},
        {"copy of 0 bytes", [&] { q.copy(JAL_COPY_H2D, m.va(), h.bus_addr(), 0, &s); },
         JAL_STATUS_INVALID_LENGTH},
        {"copy with reserved bits",
         [&] {
             q.submit_raw(
                 raw(JAL_PACKET_COPY, 0, JAL_COPY_H2D, {h.bus_addr(), m.va(), 64, 1}).data());
         },
         JAL_STATUS_INVALID_FIELD},
        {"barrier of 0 signals",
         [&] { q.submit_raw(raw(JAL_PACKET_BARRIER_AND, 0, 0, {}).data()); },
         JAL_STATUS_INVALID_FIELD},
        {"signal op 7",
         [&] {
             q.submit_raw(raw(JAL_PACKET_SIGNAL, 0, 7, {s_bus, 1}).data());
         },
         JAL_STATUS_INVALID_FIELD},
        {"H2D from an unmapped host address",
         [&] { q.copy(JAL_COPY_H2D, m.va(), unmapped_bus, 4096, &s); }, JAL_STATUS_DMA_FAULT},
        {"D2H to an unmapped host address",
         [&] { q.copy(JAL_COPY_D2H, unmapped_bus, m.va(), 4096, &s); }, JAL_STATUS_DMA_FAULT},
        {"H2D running off the host buffer",
         [&] { q.copy(JAL_COPY_H2D, m.va(), h.bus_addr() + (1 << 20) - 8, 64, &s); },
         JAL_STATUS_DMA_FAULT},
        {"H2D to an unmapped device address",
         [&] { q.copy(JAL_COPY_H2D, 0x1000, h.bus_addr(), 64, &s); }, JAL_STATUS_PAGE_FAULT},
        {"H2D into the guard page",
         [&] { q.copy(JAL_COPY_H2D, m.va() + kPage - 32, h.bus_addr(), 64, &s); },
         JAL_STATUS_PAGE_FAULT},
        {"D2D from freed memory", [&] { q.copy(JAL_COPY_D2D, m.va(), freed_va, 64, &s); },
         JAL_STATUS_PAGE_FAULT},
        {"D2H from freed memory", [&] { q.copy(JAL_COPY_D2H, h.bus_addr(), freed_va, 64, &s); },
         JAL_STATUS_PAGE_FAULT},
    };
    uint32_t errors = 0;
    for (auto& c : cases) {
        s.store(1);
        c.submit();
        EXPECT_EQ(finish(s), c.expected) << c.what;
        errors++;
        // The queue keeps serving: a good copy on the same queue.
        Signal ok(dev(), 1);
        q.copy(JAL_COPY_H2D, m.va(), h.bus_addr(), 4096, &ok);
        EXPECT_EQ(finish(ok), JAL_STATUS_OK) << "after " << c.what;
        auto st = q.status();
        EXPECT_EQ(st.state, uint32_t{JAL_QUEUE_ACTIVE}) << c.what;
        EXPECT_EQ(st.errors, errors) << c.what;
        EXPECT_EQ(st.last_error, uint32_t{c.expected}) << c.what;
    }
    // A barrier whose dependency failed fails with the dependency's status.
    Signal failed(dev(), 1), barrier(dev(), 1);
    q.copy(JAL_COPY_H2D, 0x1000, h.bus_addr(), 64, &failed);
    Signal* deps[] = {&failed};
    q.barrier_and(std::span<const Signal* const>(deps, 1), &barrier);
    EXPECT_EQ(finish(barrier), JAL_STATUS_PAGE_FAULT);
}

TEST_F(QueueTest, AQueueCannotReachAnotherContextsMemory)
{
    Context a(dev()), b(dev());
    Memory secret(a, kPage, JAL_PLACE_SLICE, 1);
    Queue qa(a), qb(b);
    HostBuffer h(dev(), 4096);
    std::memset(h.data(), 0x5a, 4096);
    Signal s(dev(), 1);
    qa.copy_to_device(secret.va(), h, 0, 4096, &s);
    ASSERT_EQ(finish(s), JAL_STATUS_OK);
    std::memset(h.data(), 0, 4096);
    // Context B has nothing mapped at A's address.
    s.store(1);
    qb.copy_to_host(h, 0, secret.va(), 4096, &s);
    EXPECT_EQ(finish(s), JAL_STATUS_PAGE_FAULT);
    EXPECT_EQ(h.data()[0], std::byte{0});
    s.store(1);
    qb.copy_to_device(secret.va(), h, 0, 4096, &s);
    EXPECT_EQ(finish(s), JAL_STATUS_PAGE_FAULT);
    // A's data is intact and A's queue still works.
    s.store(1);
    qa.copy_to_host(h, 0, secret.va(), 4096, &s);
    EXPECT_EQ(finish(s), JAL_STATUS_OK);
    EXPECT_EQ(h.data()[4095], std::byte{0x5a});
}

TEST_F(QueueTest, AnotherClientCannotTouchThisClientsContext)
{
    Context a(dev());
    Memory m(a, kPage, JAL_PLACE_SLICE, 1);
    // Reach for context a's id from another host function: refused.
    jal_admin_sqe sqe{};
    sqe.opcode = JAL_ADMIN_FREE_MEMORY;
    sqe.cdw[0] = a.id();
    sqe.cdw[1] = static_cast<uint32_t>(m.va());
    sqe.cdw[2] = static_cast<uint32_t>(m.va() >> 32);
    jal::ChipFunction raw = jal::ChipFunction::open(0, emu().open_options());
    EXPECT_EQ(raw.admin_execute_raw(sqe).completion.status, JAL_STATUS_PERMISSION);
}

// Host buffers and signals are reached through their client's bus address space
// (docs/security.md, "Contexts"): another client's copies that name this client's bus
// addresses neither read nor write them. This client's own copies to the same addresses do,
// so the addresses are right and the check can fail.
TEST_F(QueueTest, AnotherClientCannotReachThisClientsHostMemoryOrSignals)
{
    HostBuffer mine(dev(), kPage);
    std::memset(mine.data(), 0x5a, kPage);
    Signal flag(dev(), 7);
    uint64_t flag_bus = 0;
    ASSERT_EQ(jal_signal_bus_addr(flag.get(), &flag_bus), JAL_STATUS_OK);

    Device other(0, emu().socket_dir());
    Context ctx(other);
    Queue q(ctx);
    Memory m(ctx, kPage, JAL_PLACE_SLICE, 1);
    HostBuffer theirs(other, kPage);
    std::memset(theirs.data(), 0x11, kPage);
    auto copy = [&](Queue& on, jal_copy_dir dir, uint64_t dst, uint64_t src, size_t bytes) {
        Signal done(&on == &q ? other : dev(), 1);
        on.copy(dir, dst, src, bytes, &done);
        return finish(done);
    };
    ASSERT_EQ(copy(q, JAL_COPY_H2D, m.va(), theirs.bus_addr(), kPage), JAL_STATUS_OK);

    const jal_status read = copy(q, JAL_COPY_H2D, m.va(), mine.bus_addr(), kPage);
    const jal_status wrote = copy(q, JAL_COPY_D2H, mine.bus_addr(), m.va(), kPage);
    const jal_status signalled = copy(q, JAL_COPY_D2H, flag_bus, m.va(), sizeof(jal_signal));
    // Each ends in a DMA fault or in the other client's own memory at that bus address (its
    // signal pool sits where this one's does), never here.
    RecordProperty("statuses", std::string(jal_status_name(read)) + " " + jal_status_name(wrote) +
                                   " " + jal_status_name(signalled));
    // Nothing of this client's buffer reached the other's device memory...
    std::memset(theirs.data(), 0, kPage);
    ASSERT_EQ(copy(q, JAL_COPY_D2H, theirs.bus_addr(), m.va(), kPage), JAL_STATUS_OK);
    for (size_t i = 0; i < kPage; i++)
        ASSERT_NE(theirs.data()[i], std::byte{0x5a}) << "byte " << i << " was read";
    // ... and this client's buffer and signal are as they were.
    for (size_t i = 0; i < kPage; i++)
        ASSERT_EQ(mine.data()[i], std::byte{0x5a}) << "byte " << i << " was written";
    EXPECT_EQ(flag.value(), 7);

    // Through this client's own queue the same addresses are reached.
    Context own_ctx(dev());
    Queue own(own_ctx);
    Memory own_m(own_ctx, kPage, JAL_PLACE_SLICE, 1);
    ASSERT_EQ(copy(own, JAL_COPY_H2D, own_m.va(), mine.bus_addr(), kPage), JAL_STATUS_OK);
    std::memset(mine.data() + 8, 0, 8);  // a zero to store into the signal
    ASSERT_EQ(copy(own, JAL_COPY_H2D, own_m.va() + 8, mine.bus_addr() + 8, 8), JAL_STATUS_OK);
    EXPECT_EQ(copy(own, JAL_COPY_D2H, flag_bus + offsetof(jal_signal, value), own_m.va() + 8, 8),
              JAL_STATUS_OK);
    EXPECT_EQ(flag.value(), 0);
}

TEST_F(QueueTest, InterruptAndPollingWaitsSeeTheSameCompletions)
{
    Context ctx(dev());
    Queue q(ctx, 64, 5);
    for (auto mode : {JAL_WAIT_POLL, JAL_WAIT_INTERRUPT, JAL_WAIT_HYBRID}) {
        for (int i = 0; i < 50; i++) {
            Signal s(dev(), 1);
            q.nop(&s);
            ASSERT_EQ(finish(s, mode), JAL_STATUS_OK) << "mode " << mode;
        }
    }
    // A signal without JAL_SIGNAL_INTERRUPT can only be polled.
    Signal quiet(dev(), 1, false);
    q.nop(&quiet);
    EXPECT_THROW(quiet.wait_zero(kWait, JAL_WAIT_INTERRUPT), jal::Error);
    EXPECT_TRUE(quiet.wait_zero(kWait, JAL_WAIT_POLL).satisfied);
}

}  // namespace
