// DispatchUnit::trace_dispatch: a dispatch on jal-emu --trace's modelled-time process, one
// track a physical slice: the dispatch (the command processor's launch first), and inside
// it the stages the slice entered (docs/emulator.md, "Traces").
#include "emu/chip/power_model.hpp"
#include "emu/cp/dispatch_unit.hpp"
#include "emu/tile_exec/timing_rates.hpp"

#include <fmt/format.h>
#include <jal/isa/disasm.hpp>

#include <algorithm>

namespace jal::emu {

double DispatchUnit::place(const exec::DispatchSetup& setup, double modelled_ns)
{
    std::lock_guard lock(clock_m_);
    double start = 0;
    for (const exec::DispatchSlice& s : setup.slices) start = std::max(start, free_ns_[s.physical]);
    for (const exec::DispatchSlice& s : setup.slices) free_ns_[s.physical] = start + modelled_ns;
    return start;
}

namespace {

double us(double ns)
{
    return ns / 1000.0;
}

}  // namespace

void DispatchUnit::trace_dispatch(const exec::Program& prog, const exec::DispatchSetup& setup,
                                  const exec::DispatchResult& r, double start)
{
    TraceWriter& w = *trace_->writer;
    const int pid = modelled_pid(trace_->chip);
    const double launch = exec::rates::kDispatchOverheadNs;
    const auto total = static_cast<double>(r.report.modelled_ns);
    const std::string name = prog.name.empty() ? std::string("dispatch") : prog.name;
    const nlohmann::json common = {
        {"status", r.report.status},       {"modelled_ns", r.report.modelled_ns},
        {"slices", setup.slices.size()},   {"instructions", r.report.instructions},
        {"hbm_bytes", r.report.hbm_bytes}, {"flops", r.report.flops},
        {"clock_mhz", setup.clock_mhz},    {"timing_only", setup.params.timing_only}};
    for (const exec::SliceSnapshot& s : r.slices) {
        const int tid = static_cast<int>(s.physical);
        nlohmann::json args = common;
        args["logical_slice"] = s.logical;
        args["slice_end_ns"] = s.end_ns;
        args["slice_instructions"] = s.executed;
        w.complete(pid, tid, name, "dispatch", us(start), us(launch + s.end_ns), std::move(args));
        w.complete(pid, tid, "launch", "dispatch", us(start), us(launch));
        const double t0 = start + launch;
        for (std::size_t k = 0; k < s.stages.size(); ++k) {
            if (!s.stages[k].entered) continue;
            const double end = k + 1 < s.stages.size() ? s.stages[k + 1].t_ns : s.end_ns;
            w.complete(pid, tid, fmt::format("stage {}", k), "stage", us(t0 + s.stages[k].t_ns),
                       us(std::max(0.0, end - s.stages[k].t_ns)));
        }
        trace_ops(pid, s, t0);
    }
    w.counter(pid, "clock (MHz)", us(start), {{"MHz", setup.clock_mhz}});
    if (power_) w.counter(pid, "power (W)", us(start + total), {{"W", power_->power_w()}});
}

// --trace-ops: the slice's engine ops (from start to completion) and its scalar unit's
// stalls, each named by the instruction that caused it, on the slice's engine tracks.
void DispatchUnit::trace_ops(int pid, const exec::SliceSnapshot& s, double t0)
{
    TraceWriter& w = *trace_->writer;
    for (const exec::TimingSpan& op : s.ops) {
        const char* name = isa::opcode_name(op.opcode);
        w.complete(pid, op_tid(s.physical, op.track), name ? name : "?", "op", us(t0 + op.start),
                   us(op.end - op.start), {{"pc", op.pc}});
    }
}

}  // namespace jal::emu
