#include "emu/tile_exec/executor.hpp"

#include "emu/tile_exec/peers.hpp"
#include "isa/code/opcode_table.hpp"
#include "jal/hw/status.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>
#include <vector>

namespace jal::emu::exec {

namespace {

constexpr std::uint32_t kOk = JAL_STATUS_OK;

bool valid_sem(std::int32_t q)
{
    return q >= 0 && q < JAL_ISA_SEMAPHORES;
}

// Instructions that touch nothing but registers, the pc and their issue cycle: the ALU ops
// that cannot fault (all but DIVU and REMU), LI, LUI and the branches (plain_step); and
// those that may fault or read the slice's state, which run_plain takes when they do not
// (register_step: DIVU, REMU, MOVSR and TDESC; timed_step: WAIT, SIGNAL, TREAD and TWRITE,
// which only wait in the timing model).
bool plain_op(std::uint8_t op)
{
    return (op >= JAL_OP_LI && op <= JAL_OP_LUI) || (op >= JAL_OP_ADD && op <= JAL_OP_MUL) ||
           (op >= JAL_OP_AND && op <= JAL_OP_MAX) || op == JAL_OP_ADDI || op == JAL_OP_MULI ||
           (op >= JAL_OP_BEQ && op <= JAL_OP_JMP) || op == JAL_OP_DIVU || op == JAL_OP_REMU ||
           op == JAL_OP_MOVSR || op == JAL_OP_TDESC || op == JAL_OP_TREAD || op == JAL_OP_TWRITE ||
           op == JAL_OP_WAIT || op == JAL_OP_SIGNAL;
}

enum class Plain : std::uint8_t { no, next, taken };

// A plain instruction (plain_op) on the registers: an ALU op writes x[a] (x0 reads zero
// again after), a branch (BEQ .. JMP) compares x[a] with x[b] and says whether it is
// taken; anything else is Plain::no and changes nothing. Register fields below 32. Forced
// inline: run_plain calls it for every instruction (as a call it took twice the time an instruction).
[[gnu::always_inline]] inline Plain plain_step(const Insn& i,
                                               std::array<std::uint64_t, JAL_ISA_SCALAR_REGS>& x)
{
    const std::uint64_t ra = x[i.b & 31], rb = x[i.c & 31];
    const auto sa = static_cast<std::int64_t>(ra), sb = static_cast<std::int64_t>(rb);
    const auto imm = static_cast<std::uint64_t>(static_cast<std::int64_t>(i.imm));
    std::uint64_t& rd = x[i.a & 31];
    bool taken = false;
    switch (i.op) {
    case JAL_OP_LI:
        rd = imm;
        break;
    case JAL_OP_LUI:
        rd = (rd & 0xffffffffull) | (std::uint64_t{static_cast<std::uint32_t>(i.imm)} << 32);
        break;
    case JAL_OP_ADD:
        rd = ra + rb;
        break;
    case JAL_OP_SUB:
        rd = ra - rb;
        break;
    case JAL_OP_MUL:
        rd = ra * rb;
        break;
    case JAL_OP_AND:
        rd = ra & rb;
        break;
    case JAL_OP_OR:
        rd = ra | rb;
        break;
    case JAL_OP_XOR:
        rd = ra ^ rb;
        break;
    case JAL_OP_SHL:
        rd = ra << (rb & 63);
        break;
    case JAL_OP_SHR:
        rd = ra >> (rb & 63);
        break;
    case JAL_OP_SLT:
        rd = sa < sb;
        break;
    case JAL_OP_SLTU:
        rd = ra < rb;
        break;
    case JAL_OP_MIN:
        rd = static_cast<std::uint64_t>(std::min(sa, sb));
        break;
    case JAL_OP_MAX:
        rd = static_cast<std::uint64_t>(std::max(sa, sb));
        break;
    case JAL_OP_ADDI:
        rd = ra + imm;
        break;
    case JAL_OP_MULI:
        rd = ra * imm;
        break;
    case JAL_OP_BEQ:
        taken = rd == ra;
        break;
    case JAL_OP_BNE:
        taken = rd != ra;
        break;
    case JAL_OP_BLT:
        taken = static_cast<std::int64_t>(rd) < sa;
        break;
    case JAL_OP_BGE:
        taken = static_cast<std::int64_t>(rd) >= sa;
        break;
    case JAL_OP_BLTU:
        taken = rd < ra;
        break;
    case JAL_OP_JMP:
        taken = true;
        break;
    default:
        return Plain::no;
    }
    x[0] = 0;
    return taken ? Plain::taken : Plain::next;
}

// TGATHER's rows: row r of `t` is the table row (at `base`, `table_stride` apart) that row
// r of the index tile names. `record` (a streamed gather): each run of rows is recorded
// there instead of copied. Timing-only (`data` false): the index tile holds no data, so
// every row is costed as the table's first row (its owner decides local or remote).
std::uint32_t gather_rows(const SliceState& s, const Tile& t, const Tile& idx, std::uint64_t base,
                          std::uint64_t table_stride, bool data, DeviceMemory::Access& mem,
                          Traffic& traffic, std::uint64_t& fault_va, StreamedLoads* record)
{
    const std::uint64_t rb = row_bytes(t.dtype, t.cols);
    auto index = [&](std::uint32_t r) {
        std::int32_t row = 0;
        if (data) std::memcpy(&row, s.l1 + idx.addr + std::uint64_t{r} * idx.stride, 4);
        return std::int64_t{row};
    };
    // Consecutive indices into a packed table, gathered into packed rows, move as one run,
    // as TLOAD's back-to-back rows do (an expert's rows are gathered in order). Not when the
    // rows land on the index tile (a row's index must be read after the rows before it are
    // written), nor across a peer's or an unmapped page.
    const bool runs =
        data && t.stride == rb && table_stride == rb && !t.span().overlaps(idx.span());
    std::uint32_t st = JAL_STATUS_OK;
    for (std::uint32_t r = 0; r < t.rows && st == JAL_STATUS_OK;) {
        const std::int64_t row = index(r);
        const std::uint64_t va = base + static_cast<std::uint64_t>(row) * table_stride;
        std::uint32_t n = 1;
        if (runs)
            while (r + n < t.rows && index(r + n) == row + n) ++n;
        std::byte* l1 = s.l1 + t.addr + std::uint64_t{r} * t.stride;
        const bool here = (n > 1 || record) && mem.mapped_here(va, n * rb);
        const bool one = n == 1 || here;
        const std::uint64_t piece = one ? n * rb : rb;  // else the run's rows one by one
        // A streamed run on this chip is recorded (a peer's rows move: their link time is
        // charged only for bytes that cross).
        const bool keep = record && here;
        const bool copy = data && !keep;
        for (std::uint64_t off = 0; off < n * rb && st == JAL_STATUS_OK; off += piece)
            st =
                mem.read(va + off, copy ? l1 + off : nullptr, piece, s.physical, traffic, fault_va);
        if (st == JAL_STATUS_OK && keep) {
            const std::uint32_t at = t.addr + r * t.stride;
            const L1Range span{at, static_cast<std::uint32_t>(at + (n - 1) * t.stride + rb)};
            record->add({span, at, n, t.stride, rb, va, table_stride});
        }
        r += n;
    }
    return st;
}

}  // namespace

std::uint64_t Executor::enter_stage(SliceState& s, const Insn& i)
{
    const std::uint32_t n = fabric_.slices();
    const std::uint64_t all = n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
    const std::uint64_t mask = s.x[i.a & 31] & all;
    s.timing.fence_and_clear_semaphores();
    s.q.fill(0);
    s.owes_barrier = i.c == 1;
    const bool enters = mask >> s.index & 1;
    if (p_.log_stages) s.stages.push_back({s.timing.now(), enters});
    if (enters) {
        s.stage_mask = mask == all ? 0 : mask;
        s.stage_args = s.x[i.b & 31];
        return s.pc + 1;
    }
    s.stage_mask = 0;
    s.stage_args = 0;
    return s.pc + static_cast<std::int64_t>(i.imm);
}

bool Executor::join_barrier(SliceState& s, std::uint64_t group)
{
    double release = 0;
    if (!fabric_.barrier(s, group, release)) {
        s.state = SliceRunState::blocked;
        s.block = BlockReason::barrier;
        s.resuming = true;
        return false;
    }
    s.timing.resume_at(release);
    return true;
}

bool Executor::settle(SliceState& s)
{
    if (!s.owes_barrier) return true;
    s.timing.fence_wait();  // idempotent: a resumed barrier calls it again
    if (!join_barrier(s, 0)) return false;
    s.owes_barrier = false;
    return true;
}

// DIVU and REMU by a nonzero divisor, MOVSR of any special register but the clock (run_plain
// keeps the issue time in its locals) and TDESC of a tile that fits: the register written,
// true. Anything else, or a fault, changes nothing and is false: run() takes it.
[[gnu::always_inline]] inline bool Executor::register_step(SliceState& s, const Insn& i) const
{
    auto& x = s.x;
    std::uint64_t v = 0;
    switch (i.op) {
    case JAL_OP_DIVU:
    case JAL_OP_REMU: {
        const std::uint64_t ra = x[i.b & 31], rb = x[i.c & 31];
        if (rb == 0) return false;
        v = i.op == JAL_OP_DIVU ? ra / rb : ra % rb;
        break;
    }
    case JAL_OP_MOVSR:
        switch (i.imm) {
        case JAL_SR_SLICE:
            v = s.stage_mask ? s.stage_rank() : s.index;
            break;
        case JAL_SR_NSLICES:
            v = s.stage_mask ? static_cast<std::uint32_t>(std::popcount(s.stage_mask))
                             : fabric_.slices();
            break;
        case JAL_SR_LOGICAL_SLICE:
            v = s.logical;
            break;
        case JAL_SR_ARGS:
            v = p_.args + s.stage_args;
            break;
        case JAL_SR_TIMING_ONLY:
            v = p_.timing_only ? 1 : 0;
            break;
        case JAL_SR_DISPATCH_SLICE:
            v = s.index;
            break;
        case JAL_SR_DISPATCH_NSLICES:
            v = fabric_.slices();
            break;
        default:  // the clock, or no such register
            return false;
        }
        break;
    case JAL_OP_TDESC: {
        if (i.a >= JAL_ISA_TILE_REGS) return false;
        Tile t;
        std::uint64_t bad = 0;
        if (make_tile(x[i.b & 31], x[i.c & 31], x[i.d & 31], static_cast<std::uint32_t>(i.imm),
                      std::min<std::uint32_t>(p_.program->l1_bytes, JAL_SLICE_L1_BYTES), t,
                      bad) != kOk)
            return false;
        s.t[i.a] = t;
        return true;
    }
    default:
        return false;
    }
    if (i.a) x[i.a] = v;
    return true;
}

// TREAD's and TWRITE's element: its L1 offset, or the fault (a jal_status; `addr` gets the
// tile's address when the element lies outside it).
std::uint32_t Executor::element_at(const SliceState& s, const Insn& i, std::uint32_t& off,
                                   std::uint64_t& addr)
{
    if (i.b >= JAL_ISA_TILE_REGS || i.imm < 0) return JAL_STATUS_INVALID_FIELD;
    const Tile& t = s.t[i.b];
    if (t.dtype != JAL_DT_F32 && t.dtype != JAL_DT_I32) return JAL_STATUS_INVALID_FIELD;
    const std::uint64_t row = s.x[i.c & 31], col = static_cast<std::uint64_t>(i.imm);
    if (row >= t.rows || col >= t.cols) {
        addr = t.addr;
        return JAL_STATUS_OUT_OF_RANGE;
    }
    off = static_cast<std::uint32_t>(t.addr + row * t.stride + col * 4);
    return kOk;
}

// The scalar unit waits for the engine ops on the element (written, or for a TWRITE also
// read), then TREAD reads it into x[a] (0 in timing-only mode) or TWRITE writes x[a]'s low
// word.
void Executor::access_element(SliceState& s, const Insn& i, std::uint32_t off) const
{
    s.timing.scalar_tile_access({off, off + 4}, i.op == JAL_OP_TWRITE);
    if (i.op == JAL_OP_TREAD) {
        std::uint32_t v = 0;
        if (!p_.timing_only) std::memcpy(&v, s.l1 + off, 4);
        if (i.a) s.x[i.a] = v;
    } else if (!p_.timing_only) {
        const auto v = static_cast<std::uint32_t>(s.x[i.a]);
        std::memcpy(s.l1 + off, &v, 4);
    }
}

// Instructions that only wait in the timing model, as run() runs them: WAIT for signals that
// are there (the count is in the functional model: one that is not blocks, in run()),
// SIGNAL, and TREAD and TWRITE of an element in range of an F32 or I32 tile with no
// streamed load under it (the scalar unit waits for the engine ops on the element, then the
// element moves). Issued with the issue time and energy run_plain keeps (is) handed to the
// timing model and back. Anything else is false and changes nothing: run() takes it.
[[gnu::always_inline]] inline bool
Executor::timed_step(SliceState& s, const Insn& i, std::uint32_t pc, SliceTiming::IssueState& is)
{
    std::uint32_t off = 0;
    const auto n = static_cast<std::uint64_t>(i.imm);
    switch (i.op) {
    case JAL_OP_WAIT:
    case JAL_OP_SIGNAL:
        if (!valid_sem(i.a) || i.imm < 0 || (i.op == JAL_OP_WAIT && s.q[i.a] < n)) return false;
        break;
    case JAL_OP_TREAD:
    case JAL_OP_TWRITE: {
        std::uint64_t fault_addr = 0;
        if (element_at(s, i, off, fault_addr) != kOk ||
            (!p_.timing_only && s.streamed.may_overlap({off, off + 4})))
            return false;
        break;
    }
    default:
        return false;
    }
    s.timing.issue(is);
    s.timing.set_issue_state(is);
    s.timing.at(pc, i.op);
    switch (i.op) {
    case JAL_OP_WAIT:
        s.q[i.a] -= n;
        s.timing.wait(i.a, n);
        break;
    case JAL_OP_SIGNAL:
        s.q[i.a] += n;
        s.timing.signal(i.a, n);
        break;
    default:
        access_element(s, i, off);
        break;
    }
    is = s.timing.issue_state();
    return true;
}

// The same steps as run()'s loop for these instructions (stop rule, quantum, budget, issue,
// execute), with the slice's time, energy, pc and instruction count in locals: most of a
// program's instructions are plain, and the issue time's add, store and reload through the
// timing model on each was a chain every instruction waited on (as were s.executed and n,
// which the compiler kept in memory across every write of x beside them).
void Executor::run_plain(SliceState& s, std::uint64_t& n)
{
    const std::vector<Insn>& code = p_.program->code;
    const auto size = static_cast<std::int64_t>(code.size());
    auto& x = s.x;
    SliceTiming::IssueState is = s.timing.issue_state();
    const double cycle = s.timing.cycle_ns();
    const std::uint64_t left =
        std::min(kQuantum - n, p_.budget > s.executed ? p_.budget - s.executed : 0);
    std::uint64_t done = 0;
    std::int64_t pc = s.pc;
    for (; done < left && pc < size && !fabric_.should_stop(is.t); ++done) {
        const Insn& i = code[static_cast<std::size_t>(pc)];
        if (i.a >= 32) break;  // run() faults on it
        const Plain r = plain_step(i, x);
        if (r == Plain::no && !register_step(s, i)) {
            if (!timed_step(s, i, static_cast<std::uint32_t>(pc), is)) break;  // run() takes it
            ++pc;                                                              // issued inside
            continue;
        }
        if (r == Plain::taken) {
            const std::int64_t target = pc + i.imm;
            if (target < 0 || target >= size) break;  // run() faults on it
            pc = target;
        } else {
            ++pc;
        }
        is.t += cycle;
        is.pj += rates::kPjPerInstruction;
    }
    n += done;
    s.executed += done;
    s.pc = static_cast<std::uint32_t>(pc);
    s.timing.set_issue_state(is);
}

RunResult Executor::fault(SliceState& s, std::uint32_t status, std::uint64_t address)
{
    s.state = SliceRunState::faulted;
    s.status = status;
    s.fault_address = address;
    s.fault_time = s.timing.now();
    return RunResult::faulted;
}

// long-function: the interpreter's dispatch switch, one case per opcode; splitting it would
// put a call and a state reload on every instruction of the emulator's hottest loop.
RunResult Executor::run(SliceState& s)
{
    const std::vector<Insn>& code = p_.program->code;
    auto& x = s.x;
    for (std::uint64_t n = 0;; ++n) {
        // Most non-plain instructions follow another: no call for a run of none.
        if (!s.resuming && s.pc < code.size() && plain_op(code[s.pc].op)) run_plain(s, n);
        if (fabric_.should_stop(s.timing.now())) {
            s.state = SliceRunState::stopped;
            return RunResult::stopped;
        }
        if (n == kQuantum) return RunResult::yielded;
        if (s.pc >= code.size())
            return fault(s, JAL_STATUS_INVALID_FIELD, s.pc);  // ran off the end
        const Insn& i = code[s.pc];
        if (!s.resuming) {
            if (s.executed >= p_.budget) return fault(s, JAL_STATUS_TIMEOUT);
            ++s.executed;
            s.timing.issue();
            s.timing.at(s.pc, i.op);
        }
        s.resuming = false;
        std::uint64_t next = s.pc + 1;
        std::uint32_t st = kOk;
        std::uint64_t addr = 0;
        auto wr = [&](std::uint64_t v) {
            if (i.a) x[i.a] = v;
        };
        if (i.a >= 32 && i.op < JAL_OP_TDESC) return fault(s, JAL_STATUS_INVALID_FIELD);
        switch (i.op) {
        case JAL_OP_END:
            if (!settle(s)) return RunResult::blocked;
            s.state = SliceRunState::ended;
            return RunResult::ended;
        case JAL_OP_LI:
        case JAL_OP_LUI:
            plain_step(i, x);
            break;
        case JAL_OP_MOVSR:
        case JAL_OP_DIVU:
        case JAL_OP_REMU:
            // What register_step leaves: the clock, or a fault.
            if (!register_step(s, i)) {
                if (i.op == JAL_OP_MOVSR && i.imm == JAL_SR_CLOCK)
                    wr(s.timing.cycles());
                else
                    st = JAL_STATUS_INVALID_FIELD;
            }
            break;
        case JAL_OP_ADD:
        case JAL_OP_SUB:
        case JAL_OP_MUL:
        case JAL_OP_AND:
        case JAL_OP_OR:
        case JAL_OP_XOR:
        case JAL_OP_SHL:
        case JAL_OP_SHR:
        case JAL_OP_SLT:
        case JAL_OP_SLTU:
        case JAL_OP_MIN:
        case JAL_OP_MAX:
        case JAL_OP_ADDI:
        case JAL_OP_MULI:
            plain_step(i, x);
            break;
        case JAL_OP_LD:
        case JAL_OP_ST:
        case JAL_OP_LW:
            st = step_memory(s, i, addr);
            break;
        case JAL_OP_PREFETCH:
            step_prefetch(s, i);
            break;
        case JAL_OP_BEQ:
        case JAL_OP_BNE:
        case JAL_OP_BLT:
        case JAL_OP_BGE:
        case JAL_OP_BLTU:
        case JAL_OP_JMP: {
            if (plain_step(i, x) == Plain::taken) {
                const std::int64_t target = static_cast<std::int64_t>(s.pc) + i.imm;
                if (target < 0 || target >= static_cast<std::int64_t>(code.size())) {
                    st = JAL_STATUS_INVALID_FIELD;
                    addr = static_cast<std::uint64_t>(target);
                } else {
                    next = static_cast<std::uint64_t>(target);
                }
            }
            break;
        }
        case JAL_OP_TRAP:
            return fault(s, (i.imm > 0 && i.imm < JAL_STATUS_COUNT_)
                                ? static_cast<std::uint32_t>(i.imm)
                                : std::uint32_t{JAL_STATUS_INVALID_FIELD});
        case JAL_OP_TDESC: {
            if (register_step(s, i)) break;
            // The fault: which field, or the offending L1 offset.
            Tile t;
            st = i.a >= JAL_ISA_TILE_REGS
                     ? std::uint32_t{JAL_STATUS_INVALID_FIELD}
                     : make_tile(x[i.b & 31], x[i.c & 31], x[i.d & 31],
                                 static_cast<std::uint32_t>(i.imm),
                                 std::min<std::uint32_t>(p_.program->l1_bytes, JAL_SLICE_L1_BYTES),
                                 t, addr);
            break;
        }
        case JAL_OP_TLOAD:
        case JAL_OP_TSTORE:
        case JAL_OP_TGATHER:
            st = step_tile_dma(s, i, addr);
            break;
        case JAL_OP_WAIT:
            if (!valid_sem(i.a) || i.imm < 0) {
                st = JAL_STATUS_INVALID_FIELD;
                break;
            }
            // Every engine op has completed in the functional model, so a count that is
            // not there now never will be: the slice blocks for good (the dispatch reports
            // DEADLOCK once no slice can run).
            if (s.q[i.a] < static_cast<std::uint64_t>(i.imm)) {
                s.state = SliceRunState::blocked;
                s.block = BlockReason::wait;
                s.resuming = true;
                return RunResult::blocked;
            }
            s.q[i.a] -= static_cast<std::uint64_t>(i.imm);
            s.timing.wait(i.a, static_cast<std::uint64_t>(i.imm));
            break;
        case JAL_OP_SIGNAL:
            if (!valid_sem(i.a) || i.imm < 0) {
                st = JAL_STATUS_INVALID_FIELD;
                break;
            }
            s.q[i.a] += static_cast<std::uint64_t>(i.imm);
            s.timing.signal(i.a, static_cast<std::uint64_t>(i.imm));
            break;
        case JAL_OP_TREAD:
        case JAL_OP_TWRITE: {
            std::uint32_t off = 0;
            if ((st = element_at(s, i, off, addr)) != kOk) break;
            if (!p_.timing_only && (st = stream_in(s, {off, off + 4}, false, nullptr, addr)) != kOk)
                break;
            access_element(s, i, off);
            break;
        }
        case JAL_OP_SEND: {
            std::uint64_t to = 0;
            if (i.a >= JAL_ISA_TILE_REGS || !s.t[i.a].valid() || !valid_sem(i.imm)) {
                st = JAL_STATUS_INVALID_FIELD;
                break;
            }
            if (!peer_index(s, x[i.b & 31], fabric_.slices(), to)) {
                st = JAL_STATUS_OUT_OF_RANGE;
                addr = x[i.b & 31];
                break;
            }
            const Tile& t = s.t[i.a];
            const std::uint64_t rb = row_bytes(t.dtype, t.cols);
            Message m{t.rows, t.cols, t.dtype, {}, 0};
            if (!p_.timing_only) {
                if ((st = stream_in(s, t.span(), false, nullptr, addr)) != kOk) break;
                take_message_buffer(s, m.data, rb * t.rows);
                for (std::uint32_t r = 0; r < t.rows; ++r)
                    std::memcpy(m.data.data() + r * rb, s.l1 + t.addr + std::uint64_t{r} * t.stride,
                                rb);
            }
            EngineOp op;
            op.engine = Engine::network;
            op.reads[0] = t.span();
            op.semaphore = i.imm;
            op.net_bytes = rb * t.rows;
            m.arrival = s.timing.arrival(s.timing.engine_op(op));
            s.q[i.imm] += 1;
            fabric_.send(s.index, static_cast<std::uint32_t>(to), std::move(m));
            break;
        }
        case JAL_OP_RECV: {
            std::uint64_t from = 0;
            if (i.a >= JAL_ISA_TILE_REGS || !s.t[i.a].valid() || !valid_sem(i.imm)) {
                st = JAL_STATUS_INVALID_FIELD;
                break;
            }
            if (!peer_index(s, x[i.b & 31], fabric_.slices(), from)) {
                st = JAL_STATUS_OUT_OF_RANGE;
                addr = x[i.b & 31];
                break;
            }
            Message m;
            if (!fabric_.receive(s.index, static_cast<std::uint32_t>(from), m)) {
                s.state = SliceRunState::blocked;
                s.block = BlockReason::recv;
                s.block_peer = static_cast<std::uint32_t>(from);
                s.resuming = true;
                return RunResult::blocked;
            }
            const Tile& t = s.t[i.a];
            if (m.rows != t.rows || m.cols != t.cols || m.dtype != t.dtype) {
                st = JAL_STATUS_INVALID_FIELD;
                break;
            }
            if (!p_.timing_only && !m.data.empty()) {
                const std::uint64_t rb = row_bytes(t.dtype, t.cols);
                const bool whole = t.rows == 1 || t.stride == rb;
                if ((st = stream_in(s, t.span(), whole, nullptr, addr)) != kOk) break;
                for (std::uint32_t r = 0; r < t.rows; ++r)
                    std::memcpy(s.l1 + t.addr + std::uint64_t{r} * t.stride, m.data.data() + r * rb,
                                rb);
                give_message_buffer(s, std::move(m.data));
            }
            EngineOp op;
            op.engine = Engine::network;
            op.writes = t.span();
            op.semaphore = i.imm;
            s.timing.recv(op, m.arrival);
            s.q[i.imm] += 1;
            break;
        }
        case JAL_OP_SENDALL:
            st = step_send_all(s, i, addr);
            break;
        case JAL_OP_RECVALL: {
            bool blocked = false;
            st = step_recv_all(s, i, addr, blocked);
            if (blocked) return RunResult::blocked;
            break;
        }
        case JAL_OP_BARRIER:
            if (!join_barrier(s, s.stage_mask)) return RunResult::blocked;
            break;
        case JAL_OP_STAGE:
            if (!settle(s)) return RunResult::blocked;
            next = enter_stage(s, i);
            break;
        case JAL_OP_ACQUIRE:
            if (!settle(s)) return RunResult::blocked;
            break;
        default: {
            const bool tile_op =
                i.op == JAL_OP_MMA || (i.op >= JAL_OP_VADD && i.op <= JAL_OP_VIOTA);
            if (!tile_op) return fault(s, JAL_STATUS_INVALID_OPCODE);
            EngineOp op;
            std::optional<DeviceMemory::Access> mem;  // held while the MMA reads b in HBM
            HostOperand b;
            if (!p_.timing_only && !s.streamed.empty()) st = stream_operands(s, i, mem, b, addr);
            if (st == kOk)
                st = execute_tile_op(s, i, p_.timing_only, op, addr, b.data ? &b : nullptr);
            if (st == kOk) s.timing.engine_op(op);
            break;
        }
        }
        if (st != kOk) return fault(s, st, addr);
        s.pc = static_cast<std::uint32_t>(next);
    }
}

void Executor::take_message_buffer(SliceState& s, std::vector<std::byte>& out, std::uint64_t bytes)
{
    if (!s.spare_messages.empty()) {
        out = std::move(s.spare_messages.back());
        s.spare_messages.pop_back();
    }
    // At least a few rows' worth: a buffer goes on to carry other messages, and one grown at
    // every larger message would allocate again and again.
    if (out.capacity() < bytes) out.reserve(std::max<std::uint64_t>(bytes, kMessageBytes));
    out.resize(bytes);
}

void Executor::give_message_buffer(SliceState& s, std::vector<std::byte>&& buffer)
{
    if (s.spare_messages.size() < kSpareMessages) s.spare_messages.push_back(std::move(buffer));
}

// A hint: a mapped line starts filling the scalar cache; anything else does nothing.
void Executor::step_prefetch(SliceState& s, const Insn& i)
{
    const std::uint64_t va =
        (s.x[i.b & 31] + static_cast<std::uint64_t>(static_cast<std::int64_t>(i.imm))) &
        ~std::uint64_t{7};
    Traffic t;
    std::uint64_t fault_va = va;
    if (p_.memory->read(va, nullptr, 8, s.physical, t, fault_va) == JAL_STATUS_OK && !t.peer)
        s.timing.scalar_prefetch(va, t.remote != 0);
}

std::uint32_t Executor::step_memory(SliceState& s, const Insn& i, std::uint64_t& addr)
{
    const std::uint64_t va =
        s.x[i.b & 31] + static_cast<std::uint64_t>(static_cast<std::int64_t>(i.imm));
    const unsigned size = i.op == JAL_OP_LW ? 4 : 8;
    addr = va;
    if (va % size) return JAL_STATUS_INVALID_FIELD;
    Traffic t;
    std::uint64_t fault_va = va;
    std::uint32_t st;
    if (i.op == JAL_OP_ST) {
        const std::uint64_t v = s.x[i.a];
        // Timing-only dispatches never write device memory; the address must still be mapped.
        st = p_.timing_only ? p_.memory->read(va, nullptr, size, s.physical, t, fault_va)
                            : p_.memory->write(va, &v, size, s.physical, t, fault_va);
        if (st == JAL_STATUS_OK) s.timing.scalar_store(va, size, t.remote != 0);
    } else {
        std::uint64_t v = 0;
        st = p_.memory->read(va, &v, size, s.physical, t, fault_va);
        if (st == JAL_STATUS_OK) {
            if (i.a) s.x[i.a] = size == 4 ? (v & 0xffffffffull) : v;
            if (t.peer)
                s.timing.peer_load(static_cast<double>(t.peer_ns));
            else
                s.timing.scalar_load(va, t.remote != 0);
        }
    }
    if (st != JAL_STATUS_OK) addr = fault_va;
    return st;
}

std::uint32_t Executor::stream_in(SliceState& s, L1Range r, bool written, DeviceMemory::Access* mem,
                                  std::uint64_t& addr)
{
    if (!s.streamed.may_overlap(r)) return kOk;  // inline: most accesses lie elsewhere
    if (written) {
        s.streamed.drop(r);
        return kOk;
    }
    return s.streamed.copy_in(r, s.l1, mem, *p_.memory, s.physical, addr);
}

namespace {
// A vector op that writes every element of its td (field a) without reading it.
bool writes_whole_td(std::uint8_t op)
{
    return op >= JAL_OP_VADD && op <= JAL_OP_VIOTA && op != JAL_OP_VFMA && op != JAL_OP_VMASK;
}

// Per opcode, bit f set when its field f (a, b, c, d) names a tile register.
const std::array<std::uint8_t, 256>& tile_fields()
{
    static const std::array<std::uint8_t, 256> table = [] {
        std::array<std::uint8_t, 256> m{};
        const isa::detail::OpTable ops = isa::detail::all_ops();
        for (const isa::detail::OpInfo* op = ops.begin; op != ops.end; ++op) {
            const isa::detail::Reg roles[4] = {op->a, op->b, op->c, op->d};
            for (int f = 0; f < 4; ++f)
                if (roles[f] == isa::detail::Reg::t) m[op->opcode] |= 1u << f;
        }
        return m;
    }();
    return table;
}
}  // namespace

// The tiles the op reads go first; a packed td it writes whole then only needs what lies
// around it.
std::uint32_t Executor::stream_operands(SliceState& s, const Insn& i,
                                        std::optional<DeviceMemory::Access>& mem, HostOperand& b,
                                        std::uint64_t& addr)
{
    const std::uint8_t fields[4] = {i.a, i.b, i.c, i.d};
    const std::uint8_t mask = tile_fields()[i.op];
    for (const int f : {1, 2, 3, 0}) {
        if (!(mask >> f & 1) || fields[f] >= JAL_ISA_TILE_REGS || !s.t[fields[f]].valid()) continue;
        const Tile& t = s.t[fields[f]];
        if (!s.streamed.may_overlap(t.span())) continue;
        if (!mem) mem.emplace(*p_.memory);
        const std::uint64_t rb = row_bytes(t.dtype, t.cols);
        StreamedSource src;
        if (i.op == JAL_OP_MMA && f == 2 && s.streamed.inside(t, rb, src) &&
            (t.rows == 1 ||
             (src.stride >= rb && src.stride <= std::numeric_limits<std::uint32_t>::max()))) {
            // numerics::mma takes rows no closer than their length, spanning no more than
            // L1 would (rows far apart in HBM, a wide shard's K rows, are copied in instead).
            const std::uint64_t len = std::uint64_t{t.rows - 1} * src.stride + rb;
            const std::byte* at =
                len <= JAL_SLICE_L1_BYTES ? mem->host_run(src.va, len, s.physical) : nullptr;
            if (at) {
                b = {at, static_cast<std::uint32_t>(t.rows == 1 ? rb : src.stride)};
                continue;
            }
        }
        const bool whole = f == 0 && writes_whole_td(i.op) && (t.rows == 1 || t.stride == rb);
        if (const std::uint32_t st = stream_in(s, t.span(), whole, &*mem, addr); st != kOk)
            return st;
    }
    return kOk;
}

// TLOAD and TSTORE: the tile's rows to or from device memory (a streamed TLOAD records
// them instead). `stride` is the rows' stride in device memory.
std::uint32_t Executor::move_rows(SliceState& s, const Insn& i, const Tile& t, std::uint64_t base,
                                  std::uint64_t stride, bool streamed, DeviceMemory::Access& mem,
                                  EngineOp& op, std::uint64_t& fault_va)
{
    const std::uint64_t rb = row_bytes(t.dtype, t.cols);
    const bool data = !p_.timing_only;
    if (i.op == JAL_OP_TSTORE) {
        // Every row is checked before any is written: a faulting store writes nothing.
        for (std::uint32_t r = 0; r < t.rows; ++r) {
            Traffic ignore;
            if (mem.read(base + r * stride, nullptr, rb, s.physical, ignore, fault_va) !=
                JAL_STATUS_OK)
                return JAL_STATUS_PAGE_FAULT;
        }
        op.reads[0] = t.span();
    } else {
        op.writes = t.span();
    }
    // Rows back to back both in device memory and in L1 move as one run: fewer, longer
    // copies (an MXFP4 row is a few hundred bytes). The same bytes by the same owners,
    // and the same first faulting byte (a poisoned page's); not across a peer's page,
    // whose link time is modelled per access, nor an unmapped one (left to the rows).
    // Streamed rows on this chip are recorded (a peer's move: the link time is charged only
    // for bytes that cross). Both need the rows' device bytes on this chip: one look.
    const bool packed = stride == rb && t.stride == rb;
    streamed = streamed && data;
    const bool here =
        (packed || streamed) && mem.mapped_here(base, std::uint64_t{t.rows - 1} * stride + rb);
    const bool one_run = packed && here;
    streamed = streamed && here;
    const std::uint64_t all = std::uint64_t{t.rows} * rb;
    const std::uint32_t runs = one_run ? 1 : t.rows;
    const std::uint64_t run_bytes = one_run ? all : rb;
    const bool copy = data && !streamed;
    std::uint32_t st = JAL_STATUS_OK;
    for (std::uint32_t r = 0; r < runs && st == JAL_STATUS_OK; ++r) {
        std::byte* l1 = s.l1 + t.addr + std::uint64_t{r} * t.stride;
        const std::uint64_t va = base + r * stride;
        if (i.op == JAL_OP_TLOAD)
            st = mem.read(va, copy ? l1 : nullptr, run_bytes, s.physical, op.traffic, fault_va);
        else
            st = mem.write(va, data ? l1 : nullptr, run_bytes, s.physical, op.traffic, fault_va);
    }
    if (st == JAL_STATUS_OK && streamed)
        s.streamed.add({t.span(), t.addr, t.rows, t.stride, rb, base, stride});
    return st;
}

std::uint32_t Executor::step_tile_dma(SliceState& s, const Insn& i, std::uint64_t& addr)
{
    // TLOAD's and TGATHER's imm: the semaphore, | JAL_DMA_STREAMED (ISA 1.5).
    const bool loads = i.op != JAL_OP_TSTORE;
    const bool streamed = loads && (i.imm & JAL_DMA_STREAMED) != 0;
    const std::int32_t sem = loads ? i.imm & ~JAL_DMA_STREAMED : i.imm;
    if (i.a >= JAL_ISA_TILE_REGS || !valid_sem(sem) || !s.t[i.a].valid())
        return JAL_STATUS_INVALID_FIELD;
    const Tile& t = s.t[i.a];
    const std::uint64_t base = s.x[i.b & 31];
    const std::uint64_t rb = row_bytes(t.dtype, t.cols);
    const bool data = !p_.timing_only;
    const Tile* idx = nullptr;
    if (i.op == JAL_OP_TGATHER) {
        if (i.d >= JAL_ISA_TILE_REGS) return JAL_STATUS_INVALID_FIELD;
        idx = &s.t[i.d];
        if (!idx->valid() || idx->dtype != JAL_DT_I32 || idx->cols != 1 || idx->rows != t.rows)
            return JAL_STATUS_INVALID_FIELD;
    }
    EngineOp op;
    op.engine = Engine::dma;
    op.semaphore = sem;
    std::uint64_t fault_va = 0;
    std::uint32_t st = JAL_STATUS_OK;
    DeviceMemory::Access mem(*p_.memory);  // the page table, held for the whole op
    if (data && !s.streamed.empty()) {
        // Streamed rows under the tiles: an index tile's and a stored tile's are read, a
        // loaded tile is written whole (what lies around it in its rows' strides is not).
        if (idx) st = stream_in(s, idx->span(), false, &mem, fault_va);
        const bool whole = loads && (t.rows == 1 || t.stride == rb);
        if (st == JAL_STATUS_OK) st = stream_in(s, t.span(), whole, &mem, fault_va);
    }
    if (st == JAL_STATUS_OK && !idx) {
        const std::uint64_t stride = s.x[i.c & 31] ? s.x[i.c & 31] : rb;
        st = move_rows(s, i, t, base, stride, streamed, mem, op, fault_va);
    } else if (st == JAL_STATUS_OK) {
        op.reads[0] = idx->span();
        op.writes = t.span();
        StreamedLoads* record = data && streamed ? &s.streamed : nullptr;
        st = gather_rows(s, t, *idx, base, s.x[i.c & 31], data, mem, op.traffic, fault_va, record);
    }
    if (st != JAL_STATUS_OK) {
        addr = fault_va;
        return st;
    }
    s.timing.engine_op(op);
    s.q[sem] += 1;
    return JAL_STATUS_OK;
}

}  // namespace jal::emu::exec
