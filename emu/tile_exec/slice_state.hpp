// The architectural state of one slice during a dispatch (isa.h's machine model), its
// timing, and what the scheduler needs to know about it (blocked on what, fault).
#pragma once

#include "emu/tile_exec/streamed_loads.hpp"
#include "emu/tile_exec/tile.hpp"
#include "emu/tile_exec/timing.hpp"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace jal::emu::exec {

// A STAGE a slice passed: its modelled time once the STAGE completed, and whether the
// slice entered the stage (else it went past it).
struct StageEntry {
    double t_ns = 0;
    bool entered = false;
};

enum class SliceRunState : std::uint8_t { runnable, blocked, ended, faulted, stopped };
enum class BlockReason : std::uint8_t {
    none,
    recv,
    barrier,
    wait
};  // wait: can never be satisfied

// A RECVALL part done (the slice blocked waiting for a tile): the group members taken, the
// columns they filled, and the latest arrival among them.
struct GatherProgress {
    std::uint32_t next = 0, cols = 0;
    double arrival = 0;
};

struct SliceState {
    SliceState(std::uint32_t index_, std::uint32_t logical_, std::uint32_t physical_,
               std::byte* l1_, std::uint32_t clock_mhz)
        : index(index_), logical(logical_), physical(physical_), l1(l1_), timing(clock_mhz)
    {}

    std::uint32_t index, logical, physical;  // dispatch index, logical and physical slice ids
    std::array<std::uint64_t, JAL_ISA_SCALAR_REGS> x{};
    std::array<Tile, JAL_ISA_TILE_REGS> t{};
    std::array<std::uint64_t, JAL_ISA_SEMAPHORES> q{};
    std::uint32_t pc = 0;
    std::byte* l1;  // JAL_SLICE_L1_BYTES of tile memory (contents undefined at start)
    std::uint64_t executed = 0;
    SliceTiming timing;
    StreamedLoads streamed;  // its streamed TLOADs' tiles, not yet copied into L1

    SliceRunState state = SliceRunState::runnable;
    BlockReason block = BlockReason::none;
    std::uint32_t block_peer = 0;  // RECV: the sending slice
    GatherProgress gather;         // RECVALL, between its tiles
    bool resuming = false;         // the instruction at pc was issued before the slice blocked
    std::uint64_t barrier_gen = 0;
    std::uint64_t barrier_group = 0;  // the slices of the barrier it waits at (0: all)

    // The current stage (STAGE): its dispatch slices (0: the whole dispatch) and the offset
    // added to the argument address. Inside it the slice's rank is the members below it.
    std::uint64_t stage_mask = 0;
    std::uint64_t stage_args = 0;
    std::uint32_t stage_rank() const
    {
        return static_cast<std::uint32_t>(
            std::popcount(stage_mask & ((std::uint64_t{1} << index) - 1)));
    }
    bool owes_barrier = false;  // an ordered STAGE: a barrier of the whole dispatch is due
    // Buffers of messages it received, reused for the messages it sends (an all-gather
    // sends as many as it receives): a send then allocates nothing.
    std::vector<std::vector<std::byte>> spare_messages;

    // With DispatchParams::log_stages: each STAGE the slice passed, in order (every slice
    // passes every STAGE of the program, entering its stage or not).
    std::vector<StageEntry> stages;
    // With DispatchParams::log_ops naming the slice: its engine ops and scalar stalls.
    std::vector<TimingSpan> ops;

    std::uint32_t status = 0;  // jal_status of a fault
    std::uint64_t fault_address = 0;
    double fault_time = 0;
};

}  // namespace jal::emu::exec
