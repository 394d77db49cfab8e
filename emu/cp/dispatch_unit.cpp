#include "emu/cp/dispatch_unit.hpp"

#include "emu/chip/power_model.hpp"
#include "emu/chip/slices.hpp"
#include "emu/tile_exec/device_memory.hpp"
#include "jal/hw/mgmt.h"
#include "jal/hw/status.h"

#include <bit>
#include <cstring>
#include <vector>

namespace jal::emu {

DispatchUnit::DispatchUnit(HbmMemory& hbm, const Mmu& mmu, Slices* slices, PowerModel* power,
                           const ChipTrace* trace)
    : hbm_(hbm), mmu_(mmu), slices_(slices), power_(power), trace_(trace)
{
    if (slices_)
        bank_.on_change = [s = slices_](std::uint64_t busy) { s->set_dispatch_busy(busy); };
}

std::vector<exec::SliceSnapshot> DispatchUnit::last_slices() const
{
    std::lock_guard lock(last_m_);
    return last_;
}

jal_dispatch_report DispatchUnit::last_report() const
{
    std::lock_guard lock(last_m_);
    return last_report_;
}

// Reads the header, then the whole object (total_size bytes, at most JAL_CODE_MAX_BYTES),
// and validates it as toolchain's jal-objdump would (isa/code/), unless the same bytes were
// validated before (ProgramCache).
std::uint32_t DispatchUnit::load(const jal_packet_dispatch& pkt, std::uint32_t ctx,
                                 std::shared_ptr<const exec::Program>& prog,
                                 std::uint64_t& fault_va)
{
    exec::DeviceMemory mem(hbm_, mmu_, ctx);
    exec::Traffic t;
    jal_code_object_header h{};
    std::uint32_t st = mem.read(pkt.code_object, &h, sizeof h, 0, t, fault_va);
    if (st != JAL_STATUS_OK) return st;
    if (h.total_size < sizeof h || h.total_size > JAL_CODE_MAX_BYTES)
        return JAL_STATUS_INVALID_LENGTH;
    // Reused by the engine's thread for kernels of usual size; a rare large object (up to
    // 1 MiB) gets its own buffer rather than staying with the thread.
    thread_local std::vector<std::uint8_t> small;
    std::vector<std::uint8_t> large;
    std::vector<std::uint8_t>& bytes = h.total_size <= 64 * 1024 ? small : large;
    bytes.resize(h.total_size);
    st = mem.read(pkt.code_object, bytes.data(), bytes.size(), 0, t, fault_va);
    if (st != JAL_STATUS_OK) return st;
    prog = programs_.get(ctx, bytes, st);
    if (st != JAL_STATUS_OK) return st;
    if (prog->args_size && !mem.mapped(pkt.args, prog->args_size)) {
        fault_va = pkt.args;
        return JAL_STATUS_PAGE_FAULT;
    }
    return JAL_STATUS_OK;
}

// An injected slice fault ends the dispatch on that slice, whatever the kernel did: a
// failed slice reports HW_FAILED at once; a hung one holds the dispatch until the command
// processor's timeout gives up on it (TIMEOUT) and resets the slice.
void DispatchUnit::take_slice_fault(const exec::DispatchSetup& setup, jal_dispatch_report& report)
{
    std::uint64_t mask = 0;
    for (const exec::DispatchSlice& s : setup.slices) mask |= 1ull << s.physical;
    std::uint32_t physical = 0;
    const Slices::Fault f = slices_->take_fault(mask, physical);
    if (f == Slices::Fault::none) return;
    std::uint32_t index = 0;
    while (setup.slices[index].physical != physical) ++index;
    report.status = f == Slices::Fault::hang ? JAL_STATUS_TIMEOUT : JAL_STATUS_HW_FAILED;
    report.fault_slice = index;
    report.fault_pc = 0;
    report.fault_opcode = 0;
    report.fault_address = 0;
    if (f == Slices::Fault::hang)
        report.modelled_ns += std::uint64_t{JAL_SLICE_HANG_TIMEOUT_US} * 1000;
}

std::uint32_t DispatchUnit::run(const jal_packet_dispatch& pkt, std::uint32_t ctx,
                                const std::atomic<bool>& abort, jal_dispatch_report& report,
                                jal_dispatch_times* times)
{
    report = {};
    report.fault_slice = ~0u;
    jal_dispatch_times unused{};
    jal_dispatch_times& t = times ? *times : unused;
    t = {};
    auto fail = [&](std::uint32_t st, std::uint64_t addr = 0) {
        report.status = st;
        report.fault_address = addr;
        t.status = st;
        return st;
    };
    if (pkt.header.arg & ~JAL_DISPATCH_F_TIMING_ONLY) return fail(JAL_STATUS_INVALID_FIELD);
    if (pkt.reserved) return fail(JAL_STATUS_INVALID_FIELD);

    // Logical ids number the enabled physical slices densely, in physical order.
    const std::uint64_t enabled = slices_ ? slices_->enabled() : ~0ull;
    std::vector<exec::DispatchSlice> order;
    std::uint32_t logical = 0;
    for (std::uint32_t p = 0; p < JAL_NUM_SLICES; ++p) {
        if (!(enabled >> p & 1)) continue;
        if (pkt.slice_mask >> logical & 1) order.push_back({logical, p});
        ++logical;
    }
    if (pkt.slice_mask == 0 || (logical < 64 && (pkt.slice_mask >> logical)))
        return fail(JAL_STATUS_INVALID_FIELD);

    std::shared_ptr<const exec::Program> prog;
    std::uint64_t fault_va = 0;
    if (const std::uint32_t st = load(pkt, ctx, prog, fault_va); st != JAL_STATUS_OK)
        return fail(st, fault_va);

    exec::DeviceMemory mem(hbm_, mmu_, ctx);
    exec::DispatchSetup setup;
    setup.params.program = prog.get();
    setup.params.memory = &mem;
    setup.params.args = pkt.args;
    setup.params.budget =
        std::uint64_t{pkt.budget_kinsn ? pkt.budget_kinsn : JAL_DISPATCH_DEFAULT_BUDGET_KINSN} *
        1000;
    setup.params.timing_only = pkt.header.arg & JAL_DISPATCH_F_TIMING_ONLY;
    setup.slices = std::move(order);
    setup.clock_mhz = power_ ? power_->clock_mhz() : JAL_CLOCK_MAX_MHZ;
    setup.voltage_mv = power_ ? power_->voltage_mv() : JAL_VOLTAGE_MAX_MV;
    setup.abort = &abort;
    const bool tracing = trace_ && *trace_;
    setup.params.log_stages = tracing;
    setup.params.log_ops = tracing ? trace_->op_slices : 0;

    exec::DispatchResult r = exec::run_dispatch(setup, bank_, exec::WorkerPool::shared());
    if (slices_) take_slice_fault(setup, r.report);
    if (power_) power_->add_dispatch_energy(r.energy_j, r.report.modelled_ns * 1e-9);
    const double start = place(setup, static_cast<double>(r.report.modelled_ns));
    if (tracing) trace_dispatch(*prog, setup, r, start);
    report = r.report;
    t.start_ns = static_cast<std::uint64_t>(start);
    t.end_ns = t.start_ns + r.report.modelled_ns;
    t.status = r.report.status;
    t.slices = static_cast<std::uint32_t>(setup.slices.size());
    {
        std::lock_guard lock(last_m_);
        last_ = std::move(r.slices);
        last_report_ = report;
    }
    return report.status;
}

}  // namespace jal::emu
