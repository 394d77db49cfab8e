// The POST trail of this boot: one entry per boot-table step, read by
// GET_LOG(JAL_LOG_POST_TRAIL).
#pragma once

#include <array>
#include <cstdint>

#include "jal/hw/admin.h"

namespace jal::fw::boot {

class PostTrail {
public:
    static constexpr std::uint32_t kEntries = 32;

    void record(std::uint64_t timestamp_us, std::uint16_t post_code, std::uint16_t step,
                std::uint32_t status)
    {
        if (count_ < kEntries)
            entries_[count_++] = jal_post_entry{timestamp_us, post_code, step, status};
    }
    std::uint32_t count() const { return count_; }
    const jal_post_entry& at(std::uint32_t i) const { return entries_[i]; }

private:
    std::array<jal_post_entry, kEntries> entries_{};
    std::uint32_t count_ = 0;
};

}  // namespace jal::fw::boot
