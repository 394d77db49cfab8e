// How a program names other slices of its dispatch on the collective network (SEND, RECV,
// SENDALL, RECVALL): a rank in the current stage, or JAL_PEER_DISPATCH + a dispatch index.
#pragma once

#include "emu/tile_exec/slice_state.hpp"

#include <cstdint>

namespace jal::emu::exec {

// `peer` as a dispatch index; false when there is no such slice (of `slices`).
bool peer_index(const SliceState& s, std::uint64_t peer, std::uint32_t slices,
                std::uint64_t& index);

// SENDALL's and RECVALL's group x[b] (0: the current stage's slices, JAL_PEER_DISPATCH: the
// dispatch's): how many slices it has; false for any other value.
bool group_size(const SliceState& s, std::uint64_t group, std::uint32_t slices,
                std::uint32_t& size);

}  // namespace jal::emu::exec
