// The physical slices' L1 memories and who is using them. A dispatch claims its physical
// slices for its whole run (another dispatch on any of them waits), so concurrent
// dispatches from different queues never share a slice's L1. L1 is host memory allocated
// on a slice's first use and kept; its contents are undefined between dispatches.
#pragma once

#include "jal/hw/chip.h"

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace jal::emu::exec {

class SliceBank {
public:
    // Waits until none of `physical_mask` is claimed, then claims them all. Returns false
    // (claiming nothing) if `abort` becomes true first.
    bool claim(std::uint64_t physical_mask, const std::atomic<bool>* abort);
    void release(std::uint64_t physical_mask);
    // The L1 of a claimed slice.
    std::byte* l1(std::uint32_t physical);
    // A claimed slice's spare message buffers (SliceState::spare_messages), kept from one
    // dispatch to the next: a decode step is a dispatch, and each began with none.
    std::vector<std::vector<std::byte>>& spare_messages(std::uint32_t physical)
    {
        return spare_messages_[physical];
    }
    // Slices running a dispatch now (the busy input of power gating and the power model).
    std::uint64_t busy() const { return claimed_.load(std::memory_order_relaxed); }
    // Called (under the bank's lock) with the claimed mask whenever it changes.
    std::function<void(std::uint64_t)> on_change;

private:
    std::mutex m_;
    std::condition_variable cv_;
    std::atomic<std::uint64_t> claimed_{0};
    std::array<std::unique_ptr<std::byte[]>, JAL_NUM_SLICES> l1_;
    std::array<std::vector<std::vector<std::byte>>, JAL_NUM_SLICES> spare_messages_;
};

}  // namespace jal::emu::exec
