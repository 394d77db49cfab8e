#include "tile_program.hpp"

#include <cstring>

#include "isa/code/opcode_table.hpp"
#include "jal/hw/isa.h"
#include "jal/hw/status.h"

namespace jal::fuzz {

namespace {

using isa::detail::Imm;
using isa::detail::OpInfo;
using isa::detail::Reg;

// x = v, touching no other register: LI the lower word (it sign-extends, so bit 31 is added
// separately), then LUI the upper word.
void load_constant(std::vector<uint64_t>& code, unsigned x, uint64_t v)
{
    code.push_back(JAL_INSN(JAL_OP_LI, x, 0, 0, 0, static_cast<int32_t>(v & 0x7fffffff)));
    if (v & 0x80000000u) {  // LI sign-extends: add the top bit of the lower word separately
        code.push_back(JAL_INSN(JAL_OP_ADDI, x, x, 0, 0, 0x40000000));
        code.push_back(JAL_INSN(JAL_OP_ADDI, x, x, 0, 0, 0x40000000));
    }
    if (v >> 32) code.push_back(JAL_INSN(JAL_OP_LUI, x, 0, 0, 0, static_cast<int32_t>(v >> 32)));
}

bool writes_loaded_value(uint8_t op)
{
    return op == JAL_OP_LD || op == JAL_OP_LW || op == JAL_OP_TREAD;
}

unsigned legal_reg(Reg role, unsigned v, bool sink)
{
    switch (role) {
    case Reg::none:
        return 0;
    case Reg::x:
        return sink ? kFirstSink + v % (JAL_ISA_SCALAR_REGS - kFirstSink) : v % kFirstSink;
    case Reg::t:
        return v % JAL_ISA_TILE_REGS;
    case Reg::q:
        return v % JAL_ISA_SEMAPHORES;
    case Reg::flag:
        return v % 2;
    }
    return 0;
}

int32_t non_negative(int32_t v)
{
    return v & 0x7fffffff;
}

// `pc` is the instruction's index in the input part, `n` the part's length.
int32_t legal_imm(const OpInfo& op, int32_t imm, uint32_t pc, uint32_t n)
{
    switch (op.imm) {
    case Imm::zero:
        return 0;
    case Imm::any:
    case Imm::high:
    case Imm::offset:
    case Imm::f32:
    case Imm::bits:
        return imm;
    case Imm::branch: {
        const int64_t target = int64_t{pc} + imm;
        if (target >= 0 && target < n) return imm;
        return static_cast<int32_t>(static_cast<uint32_t>(imm) % n) - static_cast<int32_t>(pc);
    }
    case Imm::sreg: {  // never JAL_SR_TIMING_ONLY, the one register the two models differ in
        const auto sr = static_cast<int32_t>(static_cast<uint32_t>(imm) % JAL_SR_DISPATCH_NSLICES);
        return sr >= JAL_SR_TIMING_ONLY ? sr + 1 : sr;
    }
    case Imm::tdesc: {
        const uint32_t dt = JAL_TDESC_DTYPE(imm);
        if (dt >= JAL_DT_F32 && dt <= JAL_DT_I32) return imm;
        return JAL_TDESC_IMM(JAL_TDESC_STRIDE(imm), JAL_DT_F32 + dt % JAL_DT_I32);
    }
    case Imm::sem:
        return static_cast<int32_t>(static_cast<uint32_t>(imm) % JAL_ISA_SEMAPHORES);
    case Imm::load_sem:
        return static_cast<int32_t>(static_cast<uint32_t>(imm) % JAL_ISA_SEMAPHORES) |
               (imm & JAL_DMA_STREAMED);
    case Imm::group_sem:
        return static_cast<int32_t>(static_cast<uint32_t>(imm) % JAL_ISA_SEMAPHORES) |
               (imm & JAL_GROUP_MASK);
    case Imm::count:
    case Imm::col:
    case Imm::window:
        return non_negative(imm);
    case Imm::k:
        return non_negative(imm) ? non_negative(imm) : 1;
    case Imm::cvt:
        return imm & 1;
    case Imm::layout:
        return imm & JAL_MMA_B_KMAJOR;
    case Imm::status:
        if (imm > JAL_STATUS_OK && imm < JAL_STATUS_COUNT_) return imm;
        return 1 + static_cast<int32_t>(static_cast<uint32_t>(imm) % (JAL_STATUS_COUNT_ - 1));
    }
    return 0;
}

uint64_t legal_word(uint64_t w, uint32_t pc, uint32_t n)
{
    const OpInfo* op = isa::detail::find_op(JAL_INSN_OPCODE(w));
    if (!op) {
        const auto ops = isa::detail::all_ops();
        op = ops.begin + JAL_INSN_OPCODE(w) % (ops.end - ops.begin);
    }
    const bool sink = writes_loaded_value(op->opcode);
    const unsigned a = legal_reg(op->a, JAL_INSN_A(w), sink);
    const unsigned b = legal_reg(op->b, JAL_INSN_B(w), false);
    const unsigned c = op->opcode == JAL_OP_TGATHER ? 0 : legal_reg(op->c, JAL_INSN_C(w), false);
    const unsigned d = legal_reg(op->d, JAL_INSN_D(w), false);
    return JAL_INSN(op->opcode, a, b, c, d, legal_imm(*op, JAL_INSN_IMM(w), pc, n));
}

}  // namespace

TileProgram make_tile_program(std::span<const uint8_t> input)
{
    TileProgram p;
    uint8_t setup[4] = {};
    std::memcpy(setup, input.data(), std::min<size_t>(input.size(), 4));
    input = input.subspan(std::min<size_t>(input.size(), 4));
    p.slices = 1 + setup[0] % 4;
    p.budget = 256 + uint64_t{setup[1]} * 16;  // up to kMaxTileBudget

    const uint64_t init[8] = {kTileVa, kTileVa + JAL_PAGE_SIZE, 8, 32, 64, 65536, 1, 4096};
    for (unsigned x = 1; x <= 8; ++x) load_constant(p.code, x, init[x - 1]);
    p.first_input_pc = static_cast<uint32_t>(p.code.size());
    // The appended END is a target too, so n counts it.
    const auto n = static_cast<uint32_t>(input.size() / 8 + 1);
    for (uint32_t i = 0; i + 1 < n; ++i) {
        uint64_t w;
        std::memcpy(&w, input.data() + size_t{i} * 8, 8);
        p.code.push_back(legal_word(w, i, n));
    }
    p.code.push_back(JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0));
    return p;
}

std::vector<uint8_t> tile_program_input(uint32_t slices, uint32_t budget,
                                        std::span<const uint64_t> words)
{
    std::vector<uint8_t> out = {static_cast<uint8_t>(slices - 1),
                                static_cast<uint8_t>((budget - 256) / 16), 0, 0};
    out.resize(4 + words.size_bytes());
    std::memcpy(out.data() + 4, words.data(), words.size_bytes());
    return out;
}

}  // namespace jal::fuzz
