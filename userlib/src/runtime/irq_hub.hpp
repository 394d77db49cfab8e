// User-queue interrupts of one device as the host sees them: an eventfd per MSI-X vector
// (JAL_MSIX_VECTOR_QUEUE_FIRST..JAL_MSIX_VECTORS-1), bound through the backend, and a
// generation counter that grows whenever any of them fired.
//
// Any number of threads may sleep at once. One of them (the "leader") sleeps in poll() on
// every vector's eventfd, drains what fired and bumps the generation; the others sleep on
// a condition variable until the generation moves. So an interrupt is consumed once and
// still wakes everyone who waits, and no waiter can miss it: a waiter takes a snapshot of
// the generation *before* it checks its signal, and the device writes a signal before it
// raises the interrupt announcing it.
#pragma once

#include <array>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include <jal/hw/pci.h>

#include "../backend/backend.hpp"
#include "../util/unique_fd.hpp"

namespace jal::runtime::detail {

class IrqHub {
public:
    explicit IrqHub(backend::Backend& backend) : backend_(backend) {}
    ~IrqHub();
    IrqHub(const IrqHub&) = delete;
    IrqHub& operator=(const IrqHub&) = delete;

    // Creates and binds the eventfds (once; later calls return at once).
    void ensure_bound();

    uint64_t generation();
    // Sleeps until the generation differs from `seen`, `deadline`, or `recheck` elapsed
    // (a bound on a lost interrupt). Returns true if it moved.
    bool wait(uint64_t seen, std::chrono::steady_clock::time_point deadline,
              std::chrono::milliseconds recheck = std::chrono::milliseconds(100));

    uint64_t interrupts() const { return interrupts_; }

private:
    static constexpr unsigned kVectors = JAL_MSIX_VECTORS - JAL_MSIX_VECTOR_QUEUE_FIRST;

    backend::Backend& backend_;
    std::mutex bind_mutex_;
    bool bound_ = false;
    std::array<util::UniqueFd, kVectors> fds_;

    std::mutex mutex_;
    std::condition_variable cv_;
    uint64_t generation_ = 0;
    uint64_t interrupts_ = 0;
    bool leader_ = false;
};

}  // namespace jal::runtime::detail
