// DISPATCH packets (queue.h's jal_packet_dispatch): checks the packet, reads and validates
// the code object through the queue's context MMU, maps logical slices to physical ones,
// runs the kernel (isa/dispatch.hpp) at the clock DVFS set, and feeds the modelled energy
// to the power model. Shared by every queue engine of a chip; runs on the calling engine's
// thread, so a long dispatch holds up only its own queue (docs/emulator.md).
#pragma once

#include "emu/cp/program_cache.hpp"
#include "emu/tile_exec/dispatch.hpp"
#include "emu/tile_exec/slice_bank.hpp"
#include "emu/trace/trace_writer.hpp"
#include "jal/hw/queue.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <mutex>

namespace jal::emu {

class HbmMemory;
class Mmu;
class PowerModel;
class Slices;

class DispatchUnit {
public:
    // slices/power may be null (no chip around it): then every slice counts as usable and
    // the clock is the nominal top clock.
    // trace: where jal-emu --trace puts each dispatch's slices (null or empty: nowhere).
    DispatchUnit(HbmMemory& hbm, const Mmu& mmu, Slices* slices, PowerModel* power,
                 const ChipTrace* trace = nullptr);

    // Runs `pkt` for context `ctx`; fills `report` (status included) and `times` (if not
    // null: when it ran on the slices' modelled clock, queue.h) and returns the status.
    // `abort` set (queue disabled or reset) stops the kernel with ABORTED.
    std::uint32_t run(const jal_packet_dispatch& pkt, std::uint32_t ctx,
                      const std::atomic<bool>& abort, jal_dispatch_report& report,
                      jal_dispatch_times* times = nullptr);

    // The last dispatch that ran: its report and per-slice state (console "dispatch").
    std::vector<exec::SliceSnapshot> last_slices() const;
    jal_dispatch_report last_report() const;

private:
    std::uint32_t load(const jal_packet_dispatch& pkt, std::uint32_t ctx,
                       std::shared_ptr<const exec::Program>& prog, std::uint64_t& fault_va);
    // Places a dispatch of `modelled_ns` on its slices' modelled clock: it starts when the
    // last of them is free, and they are busy until it ends. Returns the start.
    double place(const exec::DispatchSetup& setup, double modelled_ns);
    void take_slice_fault(const exec::DispatchSetup& setup, jal_dispatch_report& report);
    void trace_ops(int pid, const exec::SliceSnapshot& s, double t0);
    void trace_dispatch(const exec::Program& prog, const exec::DispatchSetup& setup,
                        const exec::DispatchResult& r, double start);

    HbmMemory& hbm_;
    const Mmu& mmu_;
    Slices* slices_;
    PowerModel* power_;
    exec::SliceBank bank_;
    ProgramCache programs_;
    const ChipTrace* trace_;
    // The data plane's modelled clock (jal_dispatch_times, the trace): each physical slice
    // is busy until free_ns_; a dispatch starts when the last of its slices is free
    // (dispatches on disjoint slices overlap).
    std::mutex clock_m_;
    std::array<double, JAL_NUM_SLICES> free_ns_{};
    mutable std::mutex last_m_;
    std::vector<exec::SliceSnapshot> last_;
    jal_dispatch_report last_report_{};
};

}  // namespace jal::emu
