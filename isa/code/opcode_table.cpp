#include "opcode_table.hpp"

#include <array>
#include <iterator>

#include <jal/hw/isa.h>

namespace jal::isa::detail {
namespace {

using R = Reg;
using I = Imm;
using S = Syntax;

constexpr OpInfo kOps[] = {
    {JAL_OP_END, "end", R::none, R::none, R::none, R::none, I::zero, S::plain},
    {JAL_OP_LI, "li", R::x, R::none, R::none, R::none, I::any, S::plain, true},
    {JAL_OP_LUI, "lui", R::x, R::none, R::none, R::none, I::high, S::plain, true},
    {JAL_OP_MOVSR, "movsr", R::x, R::none, R::none, R::none, I::sreg, S::plain, true},
    {JAL_OP_ADD, "add", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_SUB, "sub", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_MUL, "mul", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_DIVU, "divu", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_REMU, "remu", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_AND, "and", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_OR, "or", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_XOR, "xor", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_SHL, "shl", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_SHR, "shr", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_SLT, "slt", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_SLTU, "sltu", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_MIN, "min", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_MAX, "max", R::x, R::x, R::x, R::none, I::zero, S::plain, true},
    {JAL_OP_ADDI, "addi", R::x, R::x, R::none, R::none, I::any, S::plain, true},
    {JAL_OP_MULI, "muli", R::x, R::x, R::none, R::none, I::any, S::plain, true},
    {JAL_OP_LD, "ld", R::x, R::x, R::none, R::none, I::offset, S::mem, true},
    {JAL_OP_ST, "st", R::x, R::x, R::none, R::none, I::offset, S::mem},
    {JAL_OP_LW, "lw", R::x, R::x, R::none, R::none, I::offset, S::mem, true},
    {JAL_OP_PREFETCH, "prefetch", R::none, R::x, R::none, R::none, I::offset, S::mem},
    {JAL_OP_BEQ, "beq", R::x, R::x, R::none, R::none, I::branch, S::plain},
    {JAL_OP_BNE, "bne", R::x, R::x, R::none, R::none, I::branch, S::plain},
    {JAL_OP_BLT, "blt", R::x, R::x, R::none, R::none, I::branch, S::plain},
    {JAL_OP_BGE, "bge", R::x, R::x, R::none, R::none, I::branch, S::plain},
    {JAL_OP_BLTU, "bltu", R::x, R::x, R::none, R::none, I::branch, S::plain},
    {JAL_OP_JMP, "jmp", R::none, R::none, R::none, R::none, I::branch, S::plain},
    {JAL_OP_TRAP, "trap", R::none, R::none, R::none, R::none, I::status, S::plain},
    {JAL_OP_TDESC, "tdesc", R::t, R::x, R::x, R::x, I::tdesc, S::plain},
    {JAL_OP_TLOAD, "tload", R::t, R::x, R::x, R::none, I::load_sem, S::dma},
    {JAL_OP_TSTORE, "tstore", R::t, R::x, R::x, R::none, I::sem, S::dma},
    {JAL_OP_TGATHER, "tgather", R::t, R::x, R::x, R::t, I::load_sem, S::dma},
    {JAL_OP_WAIT, "wait", R::q, R::none, R::none, R::none, I::count, S::plain},
    {JAL_OP_SIGNAL, "signal", R::q, R::none, R::none, R::none, I::count, S::plain},
    {JAL_OP_TREAD, "tread", R::x, R::t, R::x, R::none, I::col, S::elem, true},
    {JAL_OP_TWRITE, "twrite", R::x, R::t, R::x, R::none, I::col, S::elem},
    {JAL_OP_MMA, "mma", R::t, R::t, R::t, R::none, I::layout, S::plain},
    {JAL_OP_VADD, "vadd", R::t, R::t, R::t, R::none, I::zero, S::plain},
    {JAL_OP_VSUB, "vsub", R::t, R::t, R::t, R::none, I::zero, S::plain},
    {JAL_OP_VMUL, "vmul", R::t, R::t, R::t, R::none, I::zero, S::plain},
    {JAL_OP_VMAX, "vmax", R::t, R::t, R::t, R::none, I::zero, S::plain},
    {JAL_OP_VMIN, "vmin", R::t, R::t, R::t, R::none, I::zero, S::plain},
    {JAL_OP_VFMA, "vfma", R::t, R::t, R::t, R::none, I::zero, S::plain},
    {JAL_OP_VSCALE, "vscale", R::t, R::t, R::none, R::none, I::f32, S::plain},
    {JAL_OP_VADDS, "vadds", R::t, R::t, R::none, R::none, I::f32, S::plain},
    {JAL_OP_VEXP, "vexp", R::t, R::t, R::none, R::none, I::zero, S::plain},
    {JAL_OP_VRSQRT, "vrsqrt", R::t, R::t, R::none, R::none, I::zero, S::plain},
    {JAL_OP_VSILU, "vsilu", R::t, R::t, R::none, R::none, I::zero, S::plain},
    {JAL_OP_VSIGMOID, "vsigmoid", R::t, R::t, R::none, R::none, I::zero, S::plain},
    {JAL_OP_VRECIP, "vrecip", R::t, R::t, R::none, R::none, I::zero, S::plain},
    {JAL_OP_VNEG, "vneg", R::t, R::t, R::none, R::none, I::zero, S::plain},
    {JAL_OP_VCLAMP, "vclamp", R::t, R::t, R::x, R::x, I::zero, S::plain},
    {JAL_OP_VREDSUM, "vredsum", R::t, R::t, R::none, R::none, I::zero, S::plain},
    {JAL_OP_VREDMAX, "vredmax", R::t, R::t, R::none, R::none, I::zero, S::plain},
    {JAL_OP_VARGMAX, "vargmax", R::t, R::t, R::none, R::none, I::zero, S::plain},
    {JAL_OP_VTOPK, "vtopk", R::t, R::t, R::none, R::none, I::k, S::plain},
    {JAL_OP_VCVT, "vcvt", R::t, R::t, R::none, R::none, I::cvt, S::plain},
    {JAL_OP_VCOPY, "vcopy", R::t, R::t, R::none, R::none, I::zero, S::plain},
    {JAL_OP_VFILL, "vfill", R::t, R::none, R::none, R::none, I::bits, S::plain},
    {JAL_OP_VMASK, "vmask", R::t, R::x, R::x, R::none, I::window, S::plain},
    {JAL_OP_VTOPKV, "vtopkv", R::t, R::t, R::none, R::none, I::k, S::plain},
    {JAL_OP_VIOTA, "viota", R::t, R::x, R::x, R::none, I::zero, S::plain},
    {JAL_OP_SEND, "send", R::t, R::x, R::none, R::none, I::sem, S::plain},
    {JAL_OP_RECV, "recv", R::t, R::x, R::none, R::none, I::sem, S::plain},
    {JAL_OP_SENDALL, "sendall", R::t, R::x, R::none, R::none, I::group_sem, S::plain},
    {JAL_OP_RECVALL, "recvall", R::t, R::x, R::none, R::none, I::group_sem, S::plain},
    {JAL_OP_BARRIER, "barrier", R::none, R::none, R::none, R::none, I::zero, S::plain},
    {JAL_OP_STAGE, "stage", R::x, R::x, R::flag, R::none, I::branch, S::plain},
    {JAL_OP_ACQUIRE, "acquire", R::none, R::none, R::none, R::none, I::zero, S::plain},
};

// Opcode -> entry, built once from kOps.
struct Index {
    std::array<const OpInfo*, 256> by_opcode{};
    constexpr Index()
    {
        for (const OpInfo& op : kOps) by_opcode[op.opcode] = &op;
    }
};
constexpr Index kIndex;

}  // namespace

const OpInfo* find_op(uint8_t opcode)
{
    return kIndex.by_opcode[opcode];
}

OpTable all_ops()
{
    return {std::begin(kOps), std::end(kOps)};
}

}  // namespace jal::isa::detail
