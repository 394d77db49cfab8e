// The AQL producer (runtime/ring.hpp) against a scripted consumer standing in for the
// command processor: index arithmetic, publication order, several producers, back-pressure,
// the doorbell and NEED_WAKEUP.
#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <map>
#include <thread>
#include <vector>

#include <jal/error.hpp>

#include "runtime/ring.hpp"

namespace {

using namespace std::chrono_literals;
using jal::runtime::detail::QueueRing;
namespace ri = jal::runtime::detail::ring_index;

TEST(RingIndex, SizesArePowersOfTwoInRange)
{
    EXPECT_TRUE(ri::valid_size(16));
    EXPECT_TRUE(ri::valid_size(1024));
    EXPECT_TRUE(ri::valid_size(65536));
    EXPECT_FALSE(ri::valid_size(0));
    EXPECT_FALSE(ri::valid_size(8));
    EXPECT_FALSE(ri::valid_size(48));
    EXPECT_FALSE(ri::valid_size(131072));
}

TEST(RingIndex, SlotWrapsAndRoomHoldsAcrossTheTopOfTheIndexSpace)
{
    EXPECT_EQ(ri::slot(0, 16), 0u);
    EXPECT_EQ(ri::slot(17, 16), 1u);
    EXPECT_EQ(ri::slot(UINT64_MAX, 16), 15u);
    // Room for packet i while i + 1 - read <= size.
    EXPECT_TRUE(ri::has_room(15, 0, 16));
    EXPECT_FALSE(ri::has_room(16, 0, 16));
    EXPECT_TRUE(ri::has_room(16, 1, 16));
    // Indices only grow; 2^64 is never reached in practice but the arithmetic is modular.
    uint64_t read = UINT64_MAX - 3;
    EXPECT_TRUE(ri::has_room(read + 15, read, 16));  // wraps past zero
    EXPECT_FALSE(ri::has_room(read + 16, read, 16));
    EXPECT_EQ(ri::in_flight(read + 5, read), 5u);
}

// Ring memory, read index and doorbell page in plain memory, plus a consumer that behaves
// like the command processor: follows the doorbell, waits for a published header, checks
// it, marks the slot INVALID and advances the read index.
struct Harness {
    explicit Harness(uint32_t size)
        : size(size), ring(size_t{size} * JAL_PACKET_SIZE), doorbell(4096),
          q(ring.data(), size, &read_index, doorbell.data(), [this] { kicks++; })
    {}

    uint64_t doorbell_value() const
    {
        return std::atomic_ref<uint64_t>(
                   *reinterpret_cast<uint64_t*>(const_cast<std::byte*>(doorbell.data()) +
                                                JAL_DOORBELL_WRITE_INDEX))
            .load(std::memory_order_acquire);
    }
    void set_need_wakeup(uint32_t v)
    {
        std::atomic_ref<uint32_t>(
            *reinterpret_cast<uint32_t*>(doorbell.data() + JAL_DOORBELL_NEED_WAKEUP))
            .store(v);
    }

    // Consumes packets until `count` retired; `seen` receives each packet's body.
    void consume(uint64_t count, std::vector<std::array<uint64_t, 2>>* seen)
    {
        uint64_t read = 0;
        while (read < count) {
            if (doorbell_value() <= read) {
                std::this_thread::yield();
                continue;
            }
            std::byte* slot = ring.data() + size_t{ri::slot(read, size)} * JAL_PACKET_SIZE;
            auto header = std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(slot));
            uint32_t h = header.load(std::memory_order_acquire);
            if ((h & 0xff) == JAL_PACKET_INVALID) {
                std::this_thread::yield();  // rung by a later producer, not yet published
                continue;
            }
            std::array<uint64_t, 2> body;
            std::memcpy(body.data(), slot + 8, sizeof body);
            if (seen) seen->push_back(body);
            header.store(0, std::memory_order_relaxed);
            read++;
            std::atomic_ref<uint64_t>(read_index).store(read, std::memory_order_release);
        }
    }

    uint32_t size;
    std::vector<std::byte> ring;
    std::vector<std::byte> doorbell;
    alignas(8) uint64_t read_index = 0;
    std::atomic<uint64_t> kicks{0};
    QueueRing q;
};

std::array<std::byte, 64> packet(uint64_t a, uint64_t b)
{
    std::array<std::byte, 64> p{};
    jal_packet_header h{JAL_PACKET_NOP, 0, 0};
    std::memcpy(p.data(), &h, sizeof h);
    std::memcpy(p.data() + 8, &a, 8);
    std::memcpy(p.data() + 16, &b, 8);
    return p;
}

TEST(QueueRing, RejectsSizesThatAreNotPowersOfTwo)
{
    std::vector<std::byte> ring(64 * 64), db(4096);
    uint64_t read = 0;
    EXPECT_THROW(QueueRing(ring.data(), 48, &read, db.data(), [] {}), jal::Error);
}

TEST(QueueRing, PublishesBodyThenHeaderAndRingsWithTheNextIndex)
{
    Harness h(16);
    auto p = packet(7, 9);
    EXPECT_EQ(h.q.submit(p.data()), 0u);
    EXPECT_EQ(h.doorbell_value(), 1u);
    EXPECT_EQ(std::memcmp(h.ring.data(), p.data(), 64), 0);
    EXPECT_EQ(h.q.submit(p.data()), 1u);
    EXPECT_EQ(h.doorbell_value(), 2u);
    EXPECT_EQ(h.q.write_index(), 2u);
}

TEST(QueueRing, KicksOnlyWhenTheEngineAskedForIt)
{
    Harness h(16);
    auto p = packet(1, 1);
    h.q.submit(p.data());
    EXPECT_EQ(h.kicks, 0u);
    h.set_need_wakeup(1);
    h.q.submit(p.data());
    EXPECT_EQ(h.kicks, 1u);
    EXPECT_EQ(h.q.kicks(), 1u);
}

TEST(QueueRing, DoorbellNeverGoesBackwards)
{
    Harness h(16);
    h.q.ring_doorbell(9);
    h.q.ring_doorbell(4);  // a slower producer of an earlier packet
    EXPECT_EQ(h.doorbell_value(), 10u);
}

TEST(QueueRing, FullRingTimesOutWithoutAConsumer)
{
    Harness h(16);
    auto p = packet(0, 0);
    for (int i = 0; i < 16; i++) h.q.submit(p.data(), 10ms);
    try {
        h.q.submit(p.data(), 10ms);
        FAIL() << "a 17th packet fit a 16-packet ring";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_TIMEOUT);
    }
}

TEST(QueueRing, BackPressureWaitsForTheDeviceToRetirePackets)
{
    Harness h(16);
    constexpr uint64_t kPackets = 1000;  // many times the ring
    std::vector<std::array<uint64_t, 2>> seen;
    std::thread device([&] { h.consume(kPackets, &seen); });
    for (uint64_t i = 0; i < kPackets; i++) {
        auto p = packet(i, ~i);
        h.q.submit(p.data());
        ASSERT_LE(h.q.write_index() - h.q.read_index(), 16u);
    }
    device.join();
    ASSERT_EQ(seen.size(), kPackets);
    for (uint64_t i = 0; i < kPackets; i++) {
        EXPECT_EQ(seen[i][0], i);
        EXPECT_EQ(seen[i][1], ~i);
    }
}

TEST(QueueRing, SeveralProducersLoseAndDuplicateNothing)
{
    Harness h(64);
    constexpr uint64_t kThreads = 4, kEach = 20000;
    std::vector<std::array<uint64_t, 2>> seen;
    std::thread device([&] { h.consume(kThreads * kEach, &seen); });
    std::vector<std::thread> producers;
    for (uint64_t t = 0; t < kThreads; t++)
        producers.emplace_back([&, t] {
            for (uint64_t i = 0; i < kEach; i++) {
                auto p = packet(t, i);
                h.q.submit(p.data());
            }
        });
    for (auto& t : producers) t.join();
    device.join();
    ASSERT_EQ(seen.size(), kThreads * kEach);
    // Each producer's packets arrive exactly once and in its own order.
    std::map<uint64_t, uint64_t> next;
    for (auto& s : seen) {
        ASSERT_LT(s[0], kThreads);
        ASSERT_EQ(s[1], next[s[0]]) << "producer " << s[0];
        next[s[0]]++;
    }
    for (uint64_t t = 0; t < kThreads; t++) EXPECT_EQ(next[t], kEach);
    EXPECT_EQ(h.doorbell_value(), kThreads * kEach);
}

TEST(QueueRing, ClearSlotsMarksEverySlotInvalid)
{
    Harness h(16);
    auto p = packet(3, 3);
    for (int i = 0; i < 5; i++) h.q.submit(p.data());
    h.q.clear_slots();
    for (uint32_t i = 0; i < 16; i++)
        EXPECT_EQ(static_cast<uint8_t>(h.ring[size_t{i} * 64]), JAL_PACKET_INVALID);
}

}  // namespace
