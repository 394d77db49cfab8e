// How a program names other slices of its dispatch on the collective network (SEND, RECV,
// SENDALL, RECVALL): a rank in the current stage, or JAL_PEER_DISPATCH + a dispatch index.
#pragma once

#include "emu/tile_exec/slice_state.hpp"

#include <cstdint>

namespace jal::emu::exec {

// `peer` as a dispatch index; false when there is no such slice (of `slices`).
bool peer_index(const SliceState& s, std::uint64_t peer, std::uint32_t slices,
                std::uint64_t& index);

// SENDALL's and RECVALL's group: x[b] as 0 (the current stage's slices) or JAL_PEER_DISPATCH
// (the dispatch's), or with imm's JAL_GROUP_MASK (ISA 1.7) a mask of dispatch slices.
struct PeerGroup {
    std::uint64_t value = 0;
    bool mask = false;
};

// How many slices the group has; false when it names none or slices the dispatch lacks.
bool group_size(const SliceState& s, PeerGroup group, std::uint32_t slices, std::uint32_t& size);

// The k-th member (group_size said it exists) as a dispatch index.
std::uint32_t group_member(const SliceState& s, PeerGroup group, std::uint32_t k,
                           std::uint32_t slices);

}  // namespace jal::emu::exec
