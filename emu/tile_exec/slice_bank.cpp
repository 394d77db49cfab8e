#include "emu/tile_exec/slice_bank.hpp"

#include "jal/hw/isa.h"

#include <chrono>

namespace jal::emu::exec {

bool SliceBank::claim(std::uint64_t mask, const std::atomic<bool>* abort)
{
    std::unique_lock lock(m_);
    while (claimed_.load() & mask) {
        if (abort && abort->load()) return false;
        cv_.wait_for(lock, std::chrono::milliseconds(10));
    }
    claimed_.fetch_or(mask);
    if (on_change) on_change(claimed_.load());
    for (std::uint32_t s = 0; s < JAL_NUM_SLICES; ++s)
        if ((mask >> s & 1) && !l1_[s])
            l1_[s].reset(new std::byte[JAL_SLICE_L1_BYTES]);  // untouched until used
    return true;
}

void SliceBank::release(std::uint64_t mask)
{
    {
        std::lock_guard lock(m_);
        claimed_.fetch_and(~mask);
        if (on_change) on_change(claimed_.load());
    }
    cv_.notify_all();
}

std::byte* SliceBank::l1(std::uint32_t physical)
{
    return l1_[physical].get();
}

}  // namespace jal::emu::exec
