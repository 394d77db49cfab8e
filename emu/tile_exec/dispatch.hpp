// Runs one dispatch: every slice of it as a cooperative task on the calling thread and,
// while more are ready, the worker pool's threads; the collective network's FIFOs and the
// barrier between them, deadlock detection, the stop rule after a fault, and the report
// (docs/tile-isa.md, "Scheduling").
//
// Determinism: slices share nothing but point-to-point FIFOs and barriers (a Kahn
// network), so each slice computes the same values and the same modelled times whatever
// order the host runs them in. After a fault at modelled time T, the other slices go on
// until their own time passes T, so the fault reported is always the one with the earliest
// modelled time (ties: the lowest slice index).
#pragma once

#include "emu/tile_exec/executor.hpp"
#include "emu/tile_exec/slice_bank.hpp"
#include "emu/tile_exec/worker_pool.hpp"
#include "jal/hw/queue.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace jal::emu::exec {

struct DispatchSlice {
    std::uint32_t logical, physical;
};

struct DispatchSetup {
    DispatchParams params;
    std::vector<DispatchSlice> slices;         // dispatch index order
    std::uint32_t clock_mhz = 2000;            // the slice clock DVFS set
    std::uint32_t voltage_mv = 900;            // the core voltage (energy scales with V²)
    const std::atomic<bool>* abort = nullptr;  // set: stop now (queue disabled or reset)
};

// One slice's state at the end, for the console and tests.
struct SliceSnapshot {
    std::uint32_t logical = 0, physical = 0, pc = 0, state = 0;
    std::uint64_t executed = 0;
    double end_ns = 0;
    std::array<std::uint64_t, JAL_ISA_SCALAR_REGS> x{};
    std::array<std::uint64_t, JAL_ISA_SEMAPHORES> q{};
    std::vector<StageEntry> stages;  // with DispatchParams::log_stages
    std::vector<TimingSpan> ops;     // with DispatchParams::log_ops naming the slice
};

struct DispatchResult {
    jal_dispatch_report report{};
    double energy_j = 0;  // modelled dynamic energy, for the power model
    std::vector<SliceSnapshot> slices;
};

// Claims the physical slices in `bank` (waits for other dispatches using them), runs the
// program on `pool`, releases them. Never throws for anything the program does.
DispatchResult run_dispatch(const DispatchSetup& setup, SliceBank& bank, WorkerPool& pool);

}  // namespace jal::emu::exec
