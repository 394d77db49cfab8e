// stages.hpp: several kernels as one dispatch (docs/tile-isa.md, "Stages").
//
// A decode step is hundreds of small kernels; each dispatch pays the command processor's
// start and retire cost and waits for the previous one to drain. link_stages() joins
// kernels, unchanged, into one program: each becomes a stage on its own slices, reading
// its own arguments from one shared buffer, and the slices meet at an on-chip barrier
// between stages instead of at a dispatch boundary. The kernels need no change: inside a
// stage SR_SLICE, SR_NSLICES, SR_ARGS, SEND/RECV peers and BARRIER refer to the stage's
// slices, as they would in a dispatch of their own (the STAGE instruction does that).
//
// The Launcher links its batches this way when LauncherOptions::stages is set
// (dispatch.hpp); link_stages is public for tools and tests.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <jal/api.h>
#include <jal/hw/isa.h>
#include <jal/kernels/builder.hpp>

namespace jal::kernels {

// One kernel of a staged program.
struct Stage {
    std::span<const uint64_t> code;  // the kernel's instructions
    uint32_t l1_bytes = 0;           // the kernel's code object's l1_bytes
    uint64_t slices = 0;             // dispatch slices it runs on (bit i: dispatch slice i)
    uint32_t args_offset = 0;        // its arguments' offset in the program's buffer (8-aligned)
    uint32_t args_size = 0;          // their bytes: the stage before reads their lines in advance
    // The kernel's shard-table argument (CodeObject::slice_table_arg): a stage before it on
    // the same slices reads the slice's entry's line in advance too; -1: none.
    int32_t slice_table_arg = -1;
    // The kernel takes its inputs from the stage before it as messages (CodeObject::
    // after_messages): its STAGE is unordered (no barrier), so it starts as soon as its
    // slice is done with the stage before, and its RECVs wait for exactly what they need.
    // It must follow that stage in the same lane, on the same slices (its SEND/RECV ranks
    // are then the same slices'), or, with dispatch_senders (CodeObject::dispatch_senders:
    // it names its senders as dispatch slices), on the whole dispatch after a stage on
    // fewer; link_stages refuses anything else.
    bool after_messages = false;
    bool dispatch_senders = false;
    // The kernel's read-ahead slot (CodeObject::readahead_slot): where the next stage runs
    // on the same slices with at most two argument lines, its reads go there instead of
    // after the kernel; -1: none.
    int32_t readahead_slot = -1;
};

// Stages that run one after another on their slices; the lanes of a section run side by
// side, so their slices should not overlap (if they do, the shared slices run the lanes in
// turn: still correct, no longer side by side).
using StageLane = std::vector<Stage>;
struct StageSection {
    std::vector<StageLane> lanes;
};

// The sections in order, each finished on every slice before the next starts. `args_size`
// covers every stage's arguments. Throws jal::Error (INVALID_FIELD) for an empty program,
// a stage without slices or with a misaligned offset, or a program over the code limit.
JAL_API CodeObject link_stages(const std::string& name, std::span<const StageSection> sections,
                               uint32_t args_size);

// Instructions link_stages adds around a stage's own (its start and its end barrier).
inline constexpr size_t kStageOverheadWords = 40;
// And, for a kernel that declares a shard table (Stage::slice_table_arg), what the stage
// before adds to read its entry's line ahead, for its own slices and for the ones that join
// from outside it: the table's address, the slice's entry, a scalar-cache set check for
// each of the kernel's argument lines, the read; twice.
inline constexpr size_t table_read_words(uint32_t args_size)
{
    constexpr size_t line = JAL_ISA_SCALAR_LINE_BYTES;
    return 2 * (5 + 7 * ((size_t{args_size} + line - 1) / line));
}

}  // namespace jal::kernels
