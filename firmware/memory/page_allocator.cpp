#include "firmware/memory/page_allocator.hpp"

#include <bit>

namespace jal::fw::memory {

void PageAllocator::init(std::uint64_t enabled_slices, const hbm::HbmState& hbm)
{
    for (std::uint32_t s = 0; s < JAL_NUM_SLICES; ++s) {
        free_bits_[s].fill(0);
        free_[s] = capacity_[s] = usable_[s] = retired_channels_[s] = 0;
        if (!((enabled_slices >> s) & 1)) continue;
        for (std::uint32_t c = 0; c < JAL_HBM_CHANNELS_PER_SLICE; ++c) {
            if (!hbm.channels[s * JAL_HBM_CHANNELS_PER_SLICE + c].usable()) continue;
            usable_[s] = static_cast<std::uint16_t>(usable_[s] | 1u << c);
            for (std::uint32_t p = c * kPagesPerChannel; p < (c + 1) * kPagesPerChannel; ++p)
                free_bits_[s][p / 32] |= 1u << (p % 32);
            capacity_[s] = static_cast<std::uint16_t>(capacity_[s] + kPagesPerChannel);
        }
        free_[s] = capacity_[s];
    }
    table_reserved_ = false;
    retired_count_ = 0;
    retired_in_channel_.fill(0);
}

bool PageAllocator::reserve_export_table()
{
    if (table_reserved_) return true;
    const std::uint32_t g = page_index(JAL_EXPORT_TABLE_PA);
    const std::uint32_t s = g / kPagesPerSlice, page = g % kPagesPerSlice;
    std::uint32_t& word = free_bits_[s][page / 32];
    if (!((word >> (page % 32)) & 1)) return false;  // out of service (or taken: too late)
    word &= ~(1u << (page % 32));
    --free_[s];
    --capacity_[s];
    table_reserved_ = true;
    return true;
}

std::uint32_t PageAllocator::take(std::uint32_t slice)
{
    if (slice >= JAL_NUM_SLICES || free_[slice] == 0) return kNoPage;
    auto& words = free_bits_[slice];
    for (std::uint32_t w = 0; w < kWords; ++w) {
        if (words[w] == 0) continue;
        const auto bit = static_cast<std::uint32_t>(std::countr_zero(words[w]));
        words[w] &= ~(1u << bit);
        --free_[slice];
        return w * 32 + bit;
    }
    return kNoPage;  // count and bitmap disagree: cannot happen
}

bool PageAllocator::release(std::uint64_t phys)
{
    if (phys % JAL_PAGE_SIZE || phys >= JAL_HBM_TOTAL_BYTES) return false;
    const auto channel = static_cast<std::uint32_t>(phys / JAL_HBM_CHANNEL_BYTES);
    const std::uint32_t slice = channel / JAL_HBM_CHANNELS_PER_SLICE;
    const std::uint32_t c = channel % JAL_HBM_CHANNELS_PER_SLICE;
    // A page of a channel that left service goes nowhere (its capacity is already gone).
    if (!((usable_[slice] >> c) & 1)) return (retired_channels_[slice] >> c) & 1;
    const auto page = static_cast<std::uint32_t>(c * kPagesPerChannel +
                                                 (phys % JAL_HBM_CHANNEL_BYTES) / JAL_PAGE_SIZE);
    if (Retired* r = find_retired(slice * kPagesPerSlice + page)) {
        if (r->released) return false;  // double free
        r->released = true;
        return true;
    }
    std::uint32_t& word = free_bits_[slice][page / 32];
    if ((word >> (page % 32)) & 1) return false;  // double free
    word |= 1u << (page % 32);
    ++free_[slice];
    return true;
}

bool PageAllocator::is_free(std::uint64_t phys) const
{
    if (phys % JAL_PAGE_SIZE || phys >= JAL_HBM_TOTAL_BYTES) return false;
    const auto channel = static_cast<std::uint32_t>(phys / JAL_HBM_CHANNEL_BYTES);
    const std::uint32_t slice = channel / JAL_HBM_CHANNELS_PER_SLICE;
    const auto page =
        static_cast<std::uint32_t>((channel % JAL_HBM_CHANNELS_PER_SLICE) * kPagesPerChannel +
                                   (phys % JAL_HBM_CHANNEL_BYTES) / JAL_PAGE_SIZE);
    return (free_bits_[slice][page / 32] >> (page % 32)) & 1;
}

std::uint32_t PageAllocator::page_index(std::uint64_t phys)
{
    if (phys % JAL_PAGE_SIZE || phys >= JAL_HBM_TOTAL_BYTES) return kNoPage;
    const auto channel = static_cast<std::uint32_t>(phys / JAL_HBM_CHANNEL_BYTES);
    return (channel / JAL_HBM_CHANNELS_PER_SLICE) * kPagesPerSlice +
           (channel % JAL_HBM_CHANNELS_PER_SLICE) * kPagesPerChannel +
           static_cast<std::uint32_t>((phys % JAL_HBM_CHANNEL_BYTES) / JAL_PAGE_SIZE);
}

PageAllocator::Retired* PageAllocator::find_retired(std::uint32_t index)
{
    for (std::uint32_t i = 0; i < retired_count_; ++i)
        if (retired_[i].index == index) return &retired_[i];
    return nullptr;
}

bool PageAllocator::retire(std::uint64_t phys)
{
    const std::uint32_t index = page_index(phys);
    if (index == kNoPage) return false;
    const std::uint32_t slice = index / kPagesPerSlice, page = index % kPagesPerSlice;
    if (!((usable_[slice] >> (page / kPagesPerChannel)) & 1)) return false;
    if (find_retired(index) || retired_count_ == kMaxRetired) return false;
    std::uint32_t& word = free_bits_[slice][page / 32];
    const bool free = (word >> (page % 32)) & 1;
    if (free) {
        word &= ~(1u << (page % 32));
        --free_[slice];
    }
    retired_[retired_count_++] = Retired{index, free};
    --capacity_[slice];
    ++retired_in_channel_[slice * JAL_HBM_CHANNELS_PER_SLICE + page / kPagesPerChannel];
    return true;
}

bool PageAllocator::retire_channel(std::uint32_t channel)
{
    if (channel >= JAL_HBM_CHANNELS) return false;
    const std::uint32_t slice = channel / JAL_HBM_CHANNELS_PER_SLICE;
    const std::uint32_t c = channel % JAL_HBM_CHANNELS_PER_SLICE;
    if (!((usable_[slice] >> c) & 1)) return false;
    for (std::uint32_t p = c * kPagesPerChannel; p < (c + 1) * kPagesPerChannel; ++p) {
        std::uint32_t& word = free_bits_[slice][p / 32];
        const bool free = (word >> (p % 32)) & 1;
        if (free) {
            word &= ~(1u << (p % 32));
            --free_[slice];
        }
    }
    usable_[slice] = static_cast<std::uint16_t>(usable_[slice] & ~(1u << c));
    retired_channels_[slice] = static_cast<std::uint16_t>(retired_channels_[slice] | 1u << c);
    capacity_[slice] = static_cast<std::uint16_t>(
        capacity_[slice] - (kPagesPerChannel - retired_in_channel_[channel]));
    return true;
}

std::uint32_t PageAllocator::free_pages_total() const
{
    std::uint32_t n = 0;
    for (auto f : free_) n += f;
    return n;
}

}  // namespace jal::fw::memory
