// WRITE_VALUE and WAIT_VALUE packets (queue.h, interface 1.9): 64-bit device words as
// semaphores between queues and between chips. A chip that has written a peer's memory
// writes a flag word there; the peer's queue waits on it. Collectives are built from them
// (docs/multichip.md, "Collectives").
#include "emu/chip/hbm_memory.hpp"
#include "emu/cp/queue_engine.hpp"
#include "jal/hw/queue.h"
#include "jal/hw/status.h"

#include <atomic>
#include <cstring>

namespace jal::emu {

namespace {

template <typename T>
T field(const std::byte* pkt, std::size_t off)
{
    T v;
    std::memcpy(&v, pkt + off, sizeof v);
    return v;
}

bool reserved_zero(const std::byte* pkt)
{
    const std::byte* r = pkt + offsetof(jal_packet_value, reserved);
    for (std::size_t i = 0; i < sizeof(jal_packet_value::reserved); ++i)
        if (r[i] != std::byte{0}) return false;
    return true;
}

bool compares(std::uint16_t op, std::uint64_t word, std::uint64_t value)
{
    switch (op) {
    case JAL_VALUE_GE:
        return word >= value;
    case JAL_VALUE_EQ:
        return word == value;
    default:
        return word != value;  // JAL_VALUE_NE, the only other op wait_value_ready() lets in
    }
}

}  // namespace

std::uint32_t QueueEngine::read_word(std::uint64_t va, std::uint64_t& out)
{
    if (va % 8) return JAL_STATUS_INVALID_FIELD;
    Mmu::View v(env_.mmu, cfg_.ctx);
    const Mmu::Page* p = v.find(va);
    if (!p) return JAL_STATUS_PAGE_FAULT;
    const Mmu::Replica& r = p->front();
    const std::uint64_t in_page = va & (Mmu::kPage - 1);
    if (r.remote()) {
        std::byte b[8];
        const std::uint32_t st = env_.mmu.peer_read(r, in_page, b);
        std::memcpy(&out, b, 8);
        return st;
    }
    if (env_.hbm.poisoned(r.pa + in_page, 8)) return JAL_STATUS_ECC_UNCORRECTED;
    // Acquire: what the word's writer stored before it (a peer's data) is seen after it.
    out = __atomic_load_n(reinterpret_cast<const std::uint64_t*>(hbm_ + r.pa + in_page),
                          __ATOMIC_ACQUIRE);
    return JAL_STATUS_OK;
}

std::uint32_t QueueEngine::write_word(std::uint64_t va, std::uint64_t value)
{
    if (va % 8) return JAL_STATUS_INVALID_FIELD;
    Mmu::View v(env_.mmu, cfg_.ctx);
    const Mmu::Page* p = v.find(va);
    if (!p) return JAL_STATUS_PAGE_FAULT;
    const std::uint64_t in_page = va & (Mmu::kPage - 1);
    // Everything this queue did before (copies, a dispatch's stores, local or remote) is
    // visible before the word is.
    std::atomic_thread_fence(std::memory_order_release);
    for (const Mmu::Replica& r : *p) {
        if (!r.remote()) {
            __atomic_store_n(reinterpret_cast<std::uint64_t*>(hbm_ + r.pa + in_page), value,
                             __ATOMIC_RELEASE);
            continue;
        }
        std::byte b[8];
        std::memcpy(b, &value, 8);
        if (const std::uint32_t st = env_.mmu.peer_write(r, in_page, b); st != JAL_STATUS_OK)
            return st;
    }
    return JAL_STATUS_OK;
}

std::uint32_t QueueEngine::execute_write_value(const std::byte* pkt, std::uint16_t arg)
{
    if (arg != 0 || field<std::uint32_t>(pkt, offsetof(jal_packet_value, timeout_us)) != 0 ||
        !reserved_zero(pkt))
        return JAL_STATUS_INVALID_FIELD;
    return write_word(field<std::uint64_t>(pkt, offsetof(jal_packet_value, addr)),
                      field<std::uint64_t>(pkt, offsetof(jal_packet_value, value)));
}

bool QueueEngine::wait_value_ready(const std::byte* pkt, std::uint16_t op, std::uint64_t index,
                                   std::uint32_t& status)
{
    if (op < JAL_VALUE_GE || op > JAL_VALUE_NE || !reserved_zero(pkt)) {
        status = JAL_STATUS_INVALID_FIELD;
        return true;
    }
    std::uint64_t word = 0;
    status = read_word(field<std::uint64_t>(pkt, offsetof(jal_packet_value, addr)), word);
    if (status != JAL_STATUS_OK) return true;
    if (compares(op, word, field<std::uint64_t>(pkt, offsetof(jal_packet_value, value))))
        return true;
    const auto now = std::chrono::steady_clock::now();
    if (wait_index_ != index) {
        wait_index_ = index;
        wait_since_ = now;
    }
    const auto timeout_us = field<std::uint32_t>(pkt, offsetof(jal_packet_value, timeout_us));
    if (timeout_us != 0 && now - wait_since_ >= std::chrono::microseconds(timeout_us)) {
        status = JAL_STATUS_TIMEOUT;
        return true;
    }
    return false;
}

}  // namespace jal::emu
