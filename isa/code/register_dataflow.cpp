// registers_read_before_written (code_object.hpp): which scalar registers a program may
// read before it has written them, on some path from its first instruction. A forward
// "written on every path" analysis over the control-flow graph the branch offsets give;
// each instruction's reads and writes come from the opcode table's register roles.
#include <jal/isa/code_object.hpp>

#include "opcode_table.hpp"

#include <deque>

namespace jal::isa {
namespace {

using detail::Imm;
using detail::Reg;

constexpr uint32_t kAll = ~uint32_t{0};

// What one instruction does to the analysis: the scalar registers it reads and writes, and
// where control goes next (a branch's target; whether it falls through).
struct Effect {
    uint32_t reads = 0, writes = 0;
    bool branches = false, falls_through = true;
};

// An opcode the table does not know reads every register a field could name.
Effect effect_of(uint64_t w)
{
    const uint8_t op = JAL_INSN_OPCODE(w);
    const uint8_t field[4] = {JAL_INSN_A(w), JAL_INSN_B(w), JAL_INSN_C(w), JAL_INSN_D(w)};
    Effect e;
    const detail::OpInfo* info = detail::find_op(op);
    const Reg role[4] = {info ? info->a : Reg::x, info ? info->b : Reg::x, info ? info->c : Reg::x,
                         info ? info->d : Reg::x};
    for (int f = 0; f < 4; f++) {
        if (role[f] != Reg::x || field[f] >= JAL_ISA_SCALAR_REGS) continue;
        const uint32_t bit = uint32_t{1} << field[f];
        if (f == 0 && info && info->writes_a) {
            e.writes |= bit;
            if (op == JAL_OP_LUI) e.reads |= bit;
        } else {
            e.reads |= bit;
        }
    }
    e.reads &= ~uint32_t{1};  // x0 reads zero, whatever was written to it
    const bool ends = op == JAL_OP_END || op == JAL_OP_TRAP;
    e.branches = !ends && info && info->imm == Imm::branch;
    e.falls_through = !ends && op != JAL_OP_JMP;
    return e;
}

}  // namespace

uint32_t registers_read_before_written(std::span<const uint64_t> code)
{
    const size_t n = code.size();
    // written[i]: registers written on every path reaching instruction i, once reached[i].
    // Values only shrink, so the work list empties.
    std::vector<uint32_t> written(n, kAll);
    std::vector<bool> reached(n, false), queued(n, false);
    std::deque<size_t> work;
    auto reach = [&](int64_t to, uint32_t w) {
        if (to < 0 || static_cast<uint64_t>(to) >= n) return;  // leaves the program
        const auto i = static_cast<size_t>(to);
        const uint32_t met = written[i] & w;
        if (reached[i] && met == written[i]) return;
        written[i] = met;
        reached[i] = true;
        if (!queued[i]) {
            queued[i] = true;
            work.push_back(i);
        }
    };
    std::vector<Effect> effect(n);
    for (size_t i = 0; i < n; i++) effect[i] = effect_of(code[i]);
    reach(0, 1);  // x0 only
    while (!work.empty()) {
        const size_t i = work.front();
        work.pop_front();
        queued[i] = false;
        const Effect& e = effect[i];
        const uint32_t out = written[i] | e.writes;
        if (e.branches) reach(static_cast<int64_t>(i) + JAL_INSN_IMM(code[i]), out);
        if (e.falls_through) reach(static_cast<int64_t>(i) + 1, out);
    }
    uint32_t needed = 0;
    for (size_t i = 0; i < n; i++)
        if (reached[i]) needed |= effect[i].reads & ~written[i];
    return needed;
}

}  // namespace jal::isa
