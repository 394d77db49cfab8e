// fuzz-tile-exec: the emulator's tile-ISA executor and scheduler (emu/tile_exec) on random
// valid programs (tile_program.hpp), on 1 to 4 slices over 4 mapped pages on two
// physical slices, as the unit tests drive it (tests/unit/emu/isa_harness.hpp).
//
// Each program runs twice: for time only, then functionally (that order, because a
// timing-only run writes no memory, so both start from the same memory). The programs'
// control flow and addresses never depend on data, so the two runs must agree on
// everything the timing model decides: the status, which slice faulted where and on what
// address, and the faulting slice's final pc, state, instruction count, end time,
// semaphores and registers (except the sinks x28..x31); without a fault also every other
// slice's, the modelled time, instructions, FLOPs, HBM bytes and energy. (After a fault the
// other slices' progress depends on host scheduling: docs/tile-isa.md, "Report".) Also:
// every generated program is a valid code object, and a fault names an instruction of the
// program.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

#include <jal/isa/code_object.hpp>
#include <jal/isa/disasm.hpp>

#include "emu/chip/hbm_memory.hpp"
#include "emu/chip/mmu.hpp"
#include "emu/tile_exec/device_memory.hpp"
#include "emu/tile_exec/dispatch.hpp"
#include "fuzz_check.hpp"
#include "jal/hw/chip.h"
#include "tile_program.hpp"

namespace {

using namespace jal::emu;
using jal::fuzz::kTilePages;
using jal::fuzz::kTileVa;

constexpr uint32_t kCtx = 1;

// One chip's worth of state for every input: the pages are scrubbed after each.
struct Machine {
    HbmMemory hbm;
    Mmu mmu;
    exec::DeviceMemory mem{hbm, mmu, kCtx};
    exec::SliceBank bank;
    exec::WorkerPool pool{2};
    uint64_t pa[kTilePages] = {};

    Machine()
    {
        // Pages 0, 1 on physical slice 0 and 2, 3 on slice 1: local and remote traffic.
        for (unsigned p = 0; p < kTilePages; ++p) {
            pa[p] = (p / 2) * JAL_HBM_SLICE_BYTES + (p % 2) * JAL_PAGE_SIZE;
            FUZZ_CHECK(mmu.map(kCtx, kTileVa + p * JAL_PAGE_SIZE, pa[p], false) == JAL_STATUS_OK);
        }
    }
    void scrub()
    {
        for (uint64_t a : pa) FUZZ_CHECK(hbm.discard(a, JAL_PAGE_SIZE));
    }
};

exec::DispatchResult run(Machine& m, const exec::Program& prog, uint32_t slices, uint64_t budget,
                         bool timing_only)
{
    exec::DispatchSetup s;
    s.params.program = &prog;
    s.params.memory = &m.mem;
    s.params.args = kTileVa;
    s.params.budget = budget;
    s.params.timing_only = timing_only;
    // Dispatch slices 0..n-1 on physical slices 0..n-1 (0 and 1 own the pages).
    for (uint32_t i = 0; i < slices; ++i) s.slices.push_back({i, i});
    s.clock_mhz = 2000;
    s.voltage_mv = 900;
    return exec::run_dispatch(s, m.bank, m.pool);
}

void print(const jal::fuzz::TileProgram& p)
{
    std::fprintf(stderr, "%u slices, budget %llu:\n", p.slices, (unsigned long long)p.budget);
    for (size_t pc = 0; pc < p.code.size(); ++pc)
        std::fprintf(
            stderr, "  %3zu: %s\n", pc,
            jal::isa::disassemble_instruction(p.code[pc], static_cast<uint32_t>(pc)).c_str());
}

void check_same(const jal::fuzz::TileProgram& p, const exec::DispatchResult& t,
                const exec::DispatchResult& f)
{
    const jal_dispatch_report &a = t.report, &b = f.report;
    // A real deadlock (every unfinished slice blocked) ends all slices at deterministic
    // points; a TRAP that raises DEADLOCK's code is a fault like any other trap.
    const bool deadlock = a.status == JAL_STATUS_DEADLOCK && a.fault_opcode != JAL_OP_TRAP;
    const bool faulted = a.fault_slice != ~0u && !deadlock;
    const bool differ = faulted ? a.status != b.status || a.fault_slice != b.fault_slice ||
                                      a.fault_pc != b.fault_pc || a.fault_address != b.fault_address
                                : std::memcmp(&a, &b, sizeof a) != 0;
    if (differ) print(p);
    if (differ)
        std::fprintf(stderr,
                     "timing-only: status %u slice %u pc %u op %u addr %#llx ns %llu insn %llu\n"
                     "functional:  status %u slice %u pc %u op %u addr %#llx ns %llu insn %llu\n",
                     a.status, a.fault_slice, a.fault_pc, a.fault_opcode,
                     (unsigned long long)a.fault_address, (unsigned long long)a.modelled_ns,
                     (unsigned long long)a.instructions, b.status, b.fault_slice, b.fault_pc,
                     b.fault_opcode, (unsigned long long)b.fault_address,
                     (unsigned long long)b.modelled_ns, (unsigned long long)b.instructions);
    FUZZ_CHECK(a.status == b.status);
    FUZZ_CHECK(a.fault_slice == b.fault_slice && a.fault_pc == b.fault_pc);
    FUZZ_CHECK(a.fault_opcode == b.fault_opcode && a.fault_address == b.fault_address);
    FUZZ_CHECK(t.slices.size() == f.slices.size());
    for (size_t i = 0; i < t.slices.size(); ++i) {
        // After a fault, how far the other slices got depends on host scheduling
        // (docs/tile-isa.md, "Report"); the faulting slice's own state does not.
        if (faulted && i != a.fault_slice) continue;
        const exec::SliceSnapshot &x = t.slices[i], &y = f.slices[i];
        FUZZ_CHECK(x.pc == y.pc && x.state == y.state && x.executed == y.executed);
        FUZZ_CHECK(x.end_ns == y.end_ns && x.q == y.q);
        for (unsigned r = 0; r < jal::fuzz::kFirstSink; ++r) FUZZ_CHECK(x.x[r] == y.x[r]);
    }
    if (faulted) return;
    FUZZ_CHECK(a.modelled_ns == b.modelled_ns && a.instructions == b.instructions);
    FUZZ_CHECK(a.flops == b.flops && a.hbm_bytes == b.hbm_bytes && a.energy_nj == b.energy_nj);
    FUZZ_CHECK(t.energy_j == f.energy_j);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size > 4 + 8 * 256) return 0;  // long programs add time, not coverage
    static Machine machine;
    const jal::fuzz::TileProgram p = jal::fuzz::make_tile_program({data, size});

    const std::vector<uint8_t> object =
        jal::isa::encode_code_object("fuzz", p.code, 64, jal::fuzz::kTileL1Bytes, {});
    std::string why;
    if (jal::isa::validate_code_object(object, &why) != JAL_STATUS_OK)
        std::fprintf(stderr, "generated program rejected: %s\n", why.c_str());
    FUZZ_CHECK(jal::isa::validate_code_object(object, nullptr) == JAL_STATUS_OK);

    const exec::Program prog = exec::Program::from_words(p.code, jal::fuzz::kTileL1Bytes);
    const exec::DispatchResult t = run(machine, prog, p.slices, p.budget, true);
    const exec::DispatchResult f = run(machine, prog, p.slices, p.budget, false);
    machine.scrub();
    FUZZ_CHECK(t.report.status < JAL_STATUS_COUNT_);
    if (t.report.fault_slice != ~0u) {
        FUZZ_CHECK(t.report.fault_slice < p.slices && t.report.fault_pc < p.code.size());
        FUZZ_CHECK(t.report.fault_opcode == JAL_INSN_OPCODE(p.code[t.report.fault_pc]));
    }
    check_same(p, t, f);
    return 0;
}
