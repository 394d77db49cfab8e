// The producer side of an AQL user queue (queue.h), independent of any backend: a ring of
// 64-byte packets in host memory, a 64-bit write index that only grows (reserved with an
// atomic fetch_add, so any number of threads may produce into one queue), the read index
// the device writes into host memory, and the queue's doorbell page.
//
// Submitting one packet:
//   1. index = write.fetch_add(1)
//   2. wait while index + 1 - read > size (the ring is full: back-pressure)
//   3. write bytes 4..63 of the packet into slot index % size
//   4. release fence, then store the 32-bit header word (release): the packet is published
//   5. doorbell: store index + 1 at JAL_DOORBELL_WRITE_INDEX with release semantics (never
//      lowering it: with several producers a later packet may have rung already), full
//      fence, read JAL_DOORBELL_NEED_WAKEUP, and kick the engine if it is set.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>

#include <jal/hw/queue.h>

namespace jal::runtime::detail {

// Index arithmetic, kept apart so it can be tested exhaustively.
namespace ring_index {

constexpr bool valid_size(uint32_t packets)
{
    return packets >= JAL_QUEUE_SIZE_MIN && packets <= JAL_QUEUE_SIZE_MAX &&
           (packets & (packets - 1)) == 0;
}

constexpr uint32_t slot(uint64_t index, uint32_t size)
{
    return static_cast<uint32_t>(index & (size - 1));
}

// Packet `index` may be written once the device has retired packet index - size, i.e.
// while (index + 1) - read <= size. Unsigned arithmetic keeps this right across 2^64.
constexpr bool has_room(uint64_t index, uint64_t read, uint32_t size)
{
    return index - read < size;
}

// Packets published or reserved and not yet retired.
constexpr uint64_t in_flight(uint64_t write, uint64_t read)
{
    return write - read;
}

}  // namespace ring_index

class QueueRing {
public:
    // `ring`: size * 64 bytes, zero-filled (every header INVALID). `read_index`: the 8
    // bytes the device writes. `doorbell`: the queue's doorbell page. `kick`: wakes a
    // sleeping engine.
    QueueRing(std::byte* ring, uint32_t size, const uint64_t* read_index, std::byte* doorbell,
              std::function<void()> kick);

    // Submits one 64-byte packet (bytes 0..3 are its header) and rings the doorbell.
    // Blocks while the ring is full; after `timeout` without room it gives up with
    // TIMEOUT (the reserved slot is then lost until the queue is reset). Returns the
    // packet's index.
    uint64_t submit(const void* packet,
                    std::chrono::nanoseconds timeout = std::chrono::nanoseconds::max());

    // The steps of submit(), for callers that batch (publish several, ring once).
    uint64_t reserve(std::chrono::nanoseconds timeout);
    void publish(uint64_t index, const void* packet);
    void ring_doorbell(uint64_t index);  // makes packets up to `index` visible

    uint64_t read_index() const;
    uint64_t write_index() const { return write_.load(std::memory_order_acquire); }
    uint32_t size() const { return size_; }
    uint64_t kicks() const { return kicks_.load(std::memory_order_relaxed); }
    // Called about every 10 ms while a submission waits for room; it may throw to give up
    // (the device was reset and will never retire the packets ahead). Set before use.
    void set_full_check(std::function<void()> check) { full_check_ = std::move(check); }

    // After the device dropped every unexecuted packet (RESET_QUEUE): marks every slot
    // INVALID again so a stale packet can never be taken for a new one. No producer may
    // be active.
    void clear_slots();
    // After a reset: slots the device skipped to (its read index) up to the write index
    // were reserved by a submission that gave up (TIMEOUT) and will never be published.
    // Fills them with no-ops and rings, so the next packet is not stuck behind a hole.
    void fill_holes();

private:
    std::byte* ring_;
    uint32_t size_;
    const uint64_t* read_index_;
    std::byte* doorbell_;
    std::function<void()> kick_;
    std::function<void()> full_check_;
    alignas(64) std::atomic<uint64_t> write_{0};
    alignas(64) std::atomic<uint64_t> kicks_{0};
};

}  // namespace jal::runtime::detail
