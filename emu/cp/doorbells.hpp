// One host function's BAR2: a 4 KiB page per user queue holding the write index the host
// publishes (offset JAL_DOORBELL_WRITE_INDEX) and the NEED_WAKEUP flag a queue engine sets
// before it sleeps (JAL_DOORBELL_NEED_WAKEUP), plus the "kick" eventfd that wakes sleeping
// engines. Both are shared with the client (GET_DOORBELLS); the emulator maps the memfd
// MAP_SHARED and keeps the object alive while any engine of the function uses it.
#pragma once

#include "jal/hw/pci.h"
#include "jal/hw/queue.h"

#include <cstddef>
#include <cstdint>

namespace jal::emu {

class Doorbells {
public:
    Doorbells();  // throws std::system_error when the memfd or eventfd cannot be made
    ~Doorbells();
    Doorbells(const Doorbells&) = delete;
    Doorbells& operator=(const Doorbells&) = delete;

    int memfd() const { return memfd_; }
    int kickfd() const { return kickfd_; }
    // The emulator's own mapping of the page array, for a host in this process (the command
    // processor's tests): one mapping for both sides, so ThreadSanitizer pairs their
    // release stores and acquire loads.
    std::byte* mapping() const { return base_; }

    std::uint64_t write_index(std::uint32_t q) const
    {
        return __atomic_load_n(word(q, JAL_DOORBELL_WRITE_INDEX), __ATOMIC_ACQUIRE);
    }
    void set_write_index(std::uint32_t q, std::uint64_t v)
    {
        __atomic_store_n(word(q, JAL_DOORBELL_WRITE_INDEX), v, __ATOMIC_RELEASE);
    }
    std::uint64_t need_wakeup(std::uint32_t q) const
    {
        return __atomic_load_n(word(q, JAL_DOORBELL_NEED_WAKEUP), __ATOMIC_ACQUIRE);
    }
    void set_need_wakeup(std::uint32_t q, std::uint64_t v)
    {
        __atomic_store_n(word(q, JAL_DOORBELL_NEED_WAKEUP), v, __ATOMIC_RELEASE);
    }
    // What an MMIO doorbell write does (QEMU, kernel driver): store, then wake the engines.
    void ring(std::uint32_t q, std::uint64_t write_index);
    void kick();

private:
    std::uint64_t* word(std::uint32_t q, std::uint32_t off) const
    {
        return reinterpret_cast<std::uint64_t*>(base_ + std::size_t{q} * JAL_DOORBELL_STRIDE + off);
    }

    int memfd_ = -1, kickfd_ = -1;
    std::byte* base_ = nullptr;
};

}  // namespace jal::emu
