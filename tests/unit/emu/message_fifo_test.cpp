// The slice-to-slice FIFO: order kept across its ring and its overflow, by one thread and
// by a producer and a consumer on two threads.
#include "emu/tile_exec/message_fifo.hpp"

#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace {

using jal::emu::exec::Message;
using jal::emu::exec::MessageFifo;

Message numbered(std::uint32_t i)
{
    Message m;
    m.rows = i;
    m.data.assign(i % 7, std::byte{static_cast<unsigned char>(i)});
    return m;
}

TEST(MessageFifo, KeepsOrderAcrossTheRingAndTheOverflow)
{
    MessageFifo f;
    Message out;
    EXPECT_TRUE(f.empty());
    EXPECT_FALSE(f.pop(out));
    std::uint32_t sent = 0, received = 0;
    // Fill well past the ring, drain part, send more while the overflow is not empty, drain
    // all, then once more from empty: every message comes out once, in order.
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < 21; ++i) f.push(numbered(sent++));
        for (int i = 0; i < 13; ++i) {
            ASSERT_TRUE(f.pop(out));
            EXPECT_EQ(out.rows, received);
            EXPECT_EQ(out.data.size(), received % 7);
            ++received;
        }
        EXPECT_FALSE(f.empty());
    }
    while (f.pop(out)) EXPECT_EQ(out.rows, received++);
    EXPECT_EQ(received, sent);
    EXPECT_TRUE(f.empty());
    f.push(numbered(sent));
    EXPECT_FALSE(f.empty());
    ASSERT_TRUE(f.pop(out));
    EXPECT_EQ(out.rows, sent);
}

TEST(MessageFifo, AProducerAndAConsumerOnTwoThreads)
{
    MessageFifo f;
    constexpr std::uint32_t kMessages = 50000;
    std::thread producer([&] {
        for (std::uint32_t i = 0; i < kMessages; ++i) {
            f.push(numbered(i));
            if (i % 1000 == 0) std::this_thread::yield();  // let the consumer catch up now and then
        }
    });
    std::uint32_t next = 0;
    bool ordered = true;
    Message out;
    while (next < kMessages) {
        if (!f.pop(out)) {
            std::this_thread::yield();
            continue;
        }
        ordered = ordered && out.rows == next && out.data.size() == next % 7;
        ++next;
    }
    producer.join();
    EXPECT_TRUE(ordered) << "a message came out of order or torn";
    EXPECT_TRUE(f.empty());
}

}  // namespace
