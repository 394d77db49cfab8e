#include "placement.hpp"

#include <bit>

#include <fmt/format.h>

namespace jal::model::detail {

namespace {
constexpr uint64_t kAlign = 256;
uint64_t mask_of(size_t slices)
{
    return slices >= 64 ? ~0ull : (1ull << slices) - 1;
}
}  // namespace

int Placement::group_arena(uint64_t mask)
{
    if (mask == 0 || (slice_sizes_.size() < 64 && mask >> slice_sizes_.size()))
        throw Error(JAL_STATUS_INVALID_FIELD,
                    fmt::format("model runtime: no slice group {:#x}", mask));
    if (std::popcount(mask) == 1) return std::countr_zero(mask);
    for (size_t i = 0; i < groups_.size(); i++)
        if (groups_[i].mask == mask) return kFirstGroup - static_cast<int>(i);
    groups_.push_back({mask, 0, nullptr});
    return kFirstGroup - static_cast<int>(groups_.size() - 1);
}

uint64_t Placement::slice_load(uint32_t slice) const
{
    uint64_t load = slice_sizes_.at(slice) + replicated_ + interleaved_ / slice_sizes_.size();
    for (const Group& g : groups_)
        if (g.mask >> slice & 1) load += g.size;
    return load;
}

uint64_t& Placement::size_of(int arena)
{
    if (arena == kReplicated) return replicated_;
    if (arena == kInterleaved) return interleaved_;
    if (arena <= kFirstGroup && static_cast<size_t>(kFirstGroup - arena) < groups_.size())
        return groups_[static_cast<size_t>(kFirstGroup - arena)].size;
    if (arena < 0 || static_cast<size_t>(arena) >= slice_sizes_.size())
        throw Error(JAL_STATUS_INVALID_FIELD, fmt::format("model runtime: no arena {}", arena));
    return slice_sizes_[static_cast<size_t>(arena)];
}

Place Placement::reserve(int arena, uint64_t bytes)
{
    uint64_t& size = size_of(arena);
    Place p{arena, size, bytes};
    size += (bytes + kAlign - 1) / kAlign * kAlign;
    return p;
}

void Placement::allocate(const runtime::Context& context)
{
    slice_mem_.resize(slice_sizes_.size());
    for (size_t s = 0; s < slice_sizes_.size(); s++)
        if (slice_sizes_[s])
            slice_mem_[s] = std::make_unique<runtime::Memory>(context, slice_sizes_[s],
                                                              JAL_PLACE_SLICE, 1ull << s, 0);
    if (replicated_)
        replicated_mem_ = std::make_unique<runtime::Memory>(
            context, replicated_, JAL_PLACE_REPLICATED, mask_of(slice_sizes_.size()), 0);
    if (interleaved_)
        interleaved_mem_ = std::make_unique<runtime::Memory>(
            context, interleaved_, JAL_PLACE_INTERLEAVED, mask_of(slice_sizes_.size()), 0);
    for (Group& g : groups_)
        if (g.size)
            g.mem =
                std::make_unique<runtime::Memory>(context, g.size, JAL_PLACE_REPLICATED, g.mask, 0);
}

uint64_t Placement::va(const Place& p) const
{
    if (p.arena == kReplicated) return replicated_mem_->va() + p.offset;
    if (p.arena == kInterleaved) return interleaved_mem_->va() + p.offset;
    if (p.arena <= kFirstGroup)
        return groups_.at(static_cast<size_t>(kFirstGroup - p.arena)).mem->va() + p.offset;
    return slice_mem_.at(static_cast<size_t>(p.arena))->va() + p.offset;
}

uint64_t Placement::bytes_reserved() const
{
    uint64_t total = replicated_ + interleaved_;
    for (uint64_t s : slice_sizes_) total += s;
    for (const Group& g : groups_) total += g.size;
    return total;
}

std::vector<std::pair<uint64_t, uint64_t>> Placement::data_ranges() const
{
    std::vector<std::pair<uint64_t, uint64_t>> out;
    for (size_t s = 0; s < slice_mem_.size(); s++)
        if (slice_mem_[s]) out.push_back({slice_mem_[s]->va(), slice_sizes_[s]});
    if (interleaved_mem_) out.push_back({interleaved_mem_->va(), interleaved_});
    return out;
}

}  // namespace jal::model::detail
