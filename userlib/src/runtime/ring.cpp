#include "ring.hpp"

#include <cstring>
#include <string>
#include <thread>

#include <jal/error.hpp>

#include "cpu_relax.hpp"

namespace jal::runtime::detail {

QueueRing::QueueRing(std::byte* ring, uint32_t size, const uint64_t* read_index,
                     std::byte* doorbell, std::function<void()> kick)
    : ring_(ring), size_(size), read_index_(read_index), doorbell_(doorbell), kick_(std::move(kick))
{
    if (!ring_index::valid_size(size))
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "queue size " + std::to_string(size) + " is not a power of two in 16..65536");
}

uint64_t QueueRing::read_index() const
{
    return std::atomic_ref<const uint64_t>(*read_index_).load(std::memory_order_acquire);
}

uint64_t QueueRing::reserve(std::chrono::nanoseconds timeout)
{
    uint64_t index = write_.fetch_add(1, std::memory_order_relaxed);
    if (ring_index::has_room(index, read_index(), size_)) return index;
    // Full: spin a little (the device retires packets quickly), then yield, then sleep.
    auto start = std::chrono::steady_clock::now();
    for (unsigned spins = 0;; spins++) {
        if (ring_index::has_room(index, read_index(), size_)) return index;
        if (spins < 256) {
            cpu_relax();
            continue;
        }
        if (std::chrono::steady_clock::now() - start >= timeout)
            throw Error(JAL_STATUS_TIMEOUT, "queue full: packet " + std::to_string(index) +
                                                " found no free slot in time (read index " +
                                                std::to_string(read_index()) +
                                                "); reset the queue");
        if (spins < 4096) {
            std::this_thread::yield();
            continue;
        }
        // A ring that stays full may belong to a device that was reset: ask every ~10 ms.
        if (full_check_ && spins % 512 == 0) full_check_();
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
}

void QueueRing::publish(uint64_t index, const void* packet)
{
    std::byte* slot = ring_ + size_t{ring_index::slot(index, size_)} * JAL_PACKET_SIZE;
    const auto* src = static_cast<const std::byte*>(packet);
    std::memcpy(slot + 4, src + 4, JAL_PACKET_SIZE - 4);
    uint32_t header;
    std::memcpy(&header, src, sizeof header);
    std::atomic_thread_fence(std::memory_order_release);
    std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(slot))
        .store(header, std::memory_order_release);
}

void QueueRing::ring_doorbell(uint64_t index)
{
    uint64_t value = index + 1;
    std::atomic_ref<uint64_t> doorbell(
        *reinterpret_cast<uint64_t*>(doorbell_ + JAL_DOORBELL_WRITE_INDEX));
    uint64_t seen = doorbell.load(std::memory_order_relaxed);
    while (seen < value && !doorbell.compare_exchange_weak(seen, value, std::memory_order_release,
                                                           std::memory_order_relaxed)) {}
    std::atomic_thread_fence(std::memory_order_seq_cst);
    std::atomic_ref<uint32_t> need_wakeup(
        *reinterpret_cast<uint32_t*>(doorbell_ + JAL_DOORBELL_NEED_WAKEUP));
    if (need_wakeup.load(std::memory_order_acquire)) {
        kicks_.fetch_add(1, std::memory_order_relaxed);
        kick_();
    }
}

uint64_t QueueRing::submit(const void* packet, std::chrono::nanoseconds timeout)
{
    uint64_t index = reserve(timeout);
    publish(index, packet);
    ring_doorbell(index);
    return index;
}

void QueueRing::clear_slots()
{
    for (uint32_t i = 0; i < size_; i++)
        std::atomic_ref<uint32_t>(*reinterpret_cast<uint32_t*>(ring_ + size_t{i} * JAL_PACKET_SIZE))
            .store(0, std::memory_order_release);
}

void QueueRing::fill_holes()
{
    uint64_t read = read_index(), write = write_index();
    if (write - read > size_ || read == write) return;
    jal_packet_nop nop{};
    nop.header.type = JAL_PACKET_NOP;
    for (uint64_t i = read; i < write; i++) publish(i, &nop);
    ring_doorbell(write - 1);
}

}  // namespace jal::runtime::detail
