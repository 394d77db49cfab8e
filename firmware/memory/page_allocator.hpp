// Physical HBM pages (JAL_PAGE_SIZE, 2 MiB), one free bitmap per physical slice. A slice
// owns channels 3s..3s+2 (chip.h), JAL_HBM_CHANNEL_BYTES / JAL_PAGE_SIZE = 576 pages each,
// so page p of slice s is channel 3s + p / 576, offset (p % 576) pages into it. Only enabled
// slices and channels in service (OK or REPAIRED) contribute pages; everything else is never
// free. About 14 KiB of SRAM.
#pragma once

#include <array>
#include <cstdint>

#include "firmware/hbm/hbm_state.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/chip.h"

namespace jal::fw::memory {

inline constexpr std::uint32_t kPagesPerChannel =
    static_cast<std::uint32_t>(JAL_HBM_CHANNEL_BYTES / JAL_PAGE_SIZE);
inline constexpr std::uint32_t kPagesPerSlice = kPagesPerChannel * JAL_HBM_CHANNELS_PER_SLICE;
inline constexpr std::uint32_t kTotalPages = kPagesPerSlice * JAL_NUM_SLICES;
static_assert(JAL_HBM_CHANNEL_BYTES % JAL_PAGE_SIZE == 0, "a channel holds whole pages");
static_assert(kPagesPerSlice % 32 == 0, "bitmap words do not straddle slices");

inline constexpr std::uint32_t kNoPage = 0xffffffffu;

// Device physical address of page `page` (0..kPagesPerSlice-1) of physical slice `slice`.
constexpr std::uint64_t page_phys(std::uint32_t slice, std::uint32_t page)
{
    const std::uint32_t channel = slice * JAL_HBM_CHANNELS_PER_SLICE + page / kPagesPerChannel;
    return std::uint64_t{channel} * JAL_HBM_CHANNEL_BYTES +
           std::uint64_t{page % kPagesPerChannel} * JAL_PAGE_SIZE;
}

class PageAllocator {
public:
    // Every page of every enabled slice's in-service channels becomes free; the rest is not.
    void init(std::uint64_t enabled_slices, const hbm::HbmState& hbm);

    // Lowest free page of the slice, now taken; kNoPage when the slice is full.
    std::uint32_t take(std::uint32_t slice);
    // Frees a page by physical address. False (and nothing changes) when the address is not
    // a page this allocator handed out: misaligned, beyond HBM, or already free.
    bool release(std::uint64_t phys);

    std::uint32_t free_pages(std::uint32_t slice) const
    {
        return slice < JAL_NUM_SLICES ? free_[slice] : 0;
    }
    std::uint32_t free_pages_total() const;
    // Pages that exist (free or taken) on the slice.
    // Takes the MMU's export table page (JAL_EXPORT_TABLE_PA, interface 1.8) out of
    // service for good: a chip with fabric ports lets peers read it, so no tenant may hold
    // it. It then counts in no slice's capacity. False if its channel or slice is out of
    // service (exports are then impossible).
    bool reserve_export_table();
    bool export_table_reserved() const { return table_reserved_; }
    std::uint32_t capacity(std::uint32_t slice) const
    {
        return slice < JAL_NUM_SLICES ? capacity_[slice] : 0;
    }
    bool is_free(std::uint64_t phys) const;

    // Takes a page out of service for good (an uncorrectable ECC error): a free page leaves
    // at once, a taken one when it is released (release() then succeeds without freeing
    // it, once). Either way the slice's capacity drops by one. False when phys is not a page
    // of an in-service channel, is already retired, or kMaxRetired pages already are.
    bool retire(std::uint64_t phys);
    // A channel left service (retraining failed): its free pages leave at once, its taken
    // ones as they are released. False when it was not in service.
    bool retire_channel(std::uint32_t channel);
    static constexpr std::uint32_t kMaxRetired = 128;  // per boot

private:
    // Global page number (slice * kPagesPerSlice + page) of a page address, or kNoPage.
    static std::uint32_t page_index(std::uint64_t phys);
    // The retired_ entry of a global page number, or nullptr.
    struct Retired {
        std::uint32_t index;
        bool released;  // free, or its owner released it: a release now is a double free
    };
    Retired* find_retired(std::uint32_t index);

    static constexpr std::uint32_t kWords = kPagesPerSlice / 32;
    bool table_reserved_ = false;
    // Bit set = page free. Pages of channels out of service or slices not enabled stay clear.
    std::array<std::array<std::uint32_t, kWords>, JAL_NUM_SLICES> free_bits_{};
    std::array<std::uint16_t, JAL_NUM_SLICES> free_{};
    std::array<std::uint16_t, JAL_NUM_SLICES> capacity_{};
    std::array<std::uint16_t, JAL_NUM_SLICES> usable_{};  // bit per channel of the slice in service
    std::array<std::uint16_t, JAL_NUM_SLICES> retired_channels_{};  // left service since boot
    // Pages retired this boot; those taken when retired are released into nothing.
    std::array<Retired, kMaxRetired> retired_{};
    std::uint32_t retired_count_ = 0;
    std::array<std::uint16_t, JAL_HBM_CHANNELS> retired_in_channel_{};
};

}  // namespace jal::fw::memory
