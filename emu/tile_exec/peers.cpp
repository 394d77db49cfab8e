#include "emu/tile_exec/peers.hpp"

#include "jal/hw/isa.h"

#include <bit>

namespace jal::emu::exec {

namespace {

// The dispatch index of the k-th set bit of `mask` (a stage's slices, a SENDALL's group),
// which has more than k.
std::uint32_t nth_member(std::uint64_t mask, std::uint32_t k)
{
    for (std::uint32_t j = 0; j < k; ++j) mask &= mask - 1;  // drop the lowest k members
    return static_cast<std::uint32_t>(std::countr_zero(mask));
}

}  // namespace

bool peer_index(const SliceState& s, std::uint64_t peer, std::uint32_t slices, std::uint64_t& index)
{
    if (peer >= JAL_PEER_DISPATCH) {  // a dispatch slice named from any stage (ISA 1.3)
        index = peer - JAL_PEER_DISPATCH;
        return index < slices;
    }
    if (!s.stage_mask) {
        index = peer;
        return peer < slices;
    }
    if (peer >= static_cast<std::uint64_t>(std::popcount(s.stage_mask))) return false;
    index = nth_member(s.stage_mask, static_cast<std::uint32_t>(peer));
    return true;
}

bool group_size(const SliceState& s, PeerGroup g, std::uint32_t slices, std::uint32_t& size)
{
    if (g.mask) {
        if (g.value == 0 || (slices < 64 && g.value >> slices != 0)) return false;
        size = static_cast<std::uint32_t>(std::popcount(g.value));
        return true;
    }
    const std::uint64_t group = g.value;
    if (group == JAL_PEER_DISPATCH || (group == 0 && !s.stage_mask)) {
        size = slices;
        return true;
    }
    if (group != 0) return false;
    size = static_cast<std::uint32_t>(std::popcount(s.stage_mask));
    return true;
}

std::uint32_t group_member(const SliceState& s, PeerGroup g, std::uint32_t k, std::uint32_t slices)
{
    if (g.mask) return nth_member(g.value, k);
    std::uint64_t index = 0;
    peer_index(s, g.value == 0 ? k : std::uint64_t{JAL_PEER_DISPATCH} + k, slices, index);
    return static_cast<std::uint32_t>(index);
}

}  // namespace jal::emu::exec
