// One instruction against the opcode table: register fields in range for their role,
// unused fields zero, immediates with a meaning valid. Branch targets need the whole
// program and are bounded in validate_code_object.cpp.
#include <jal/isa/code_object.hpp>

#include <fmt/format.h>

#include "opcode_table.hpp"

namespace jal::isa {
namespace {

using detail::Imm;
using detail::Reg;

jal_status reject(std::string* error, jal_status status, std::string message)
{
    if (error) *error = std::move(message);
    return status;
}

// Registers a role allows, and how the message names them.
struct RegRange {
    unsigned limit;
    const char* what;
};
RegRange range_of(Reg r)
{
    switch (r) {
    case Reg::x:
        return {JAL_ISA_SCALAR_REGS, "a scalar register (x0..x31)"};
    case Reg::t:
        return {JAL_ISA_TILE_REGS, "a tile register (t0..t15)"};
    case Reg::q:
        return {JAL_ISA_SEMAPHORES, "a semaphore (q0..q15)"};
    case Reg::flag:
        return {2, "a flag (0 or 1)"};
    case Reg::none:
        break;
    }
    return {1, "unused and must be zero"};
}

// A semaphore, or a semaphore | `flag` (TLOAD's streamed, SENDALL's group mask).
bool flagged_semaphore(int32_t imm, int32_t flag)
{
    const int32_t sem = imm & ~flag;
    return sem >= 0 && sem < JAL_ISA_SEMAPHORES;
}
std::string flagged_semaphore_error(int32_t imm, const char* name, int32_t flag)
{
    return fmt::format("semaphore imm is {:#x}, not a semaphore (q0..q15), optionally | {} ({:#x})",
                       static_cast<uint32_t>(imm), name, flag);
}

jal_status check_imm(const detail::OpInfo& op, int32_t imm, std::string* error)
{
    auto bad = [&](const std::string& why) {
        return reject(error, JAL_STATUS_INVALID_FIELD, fmt::format("{}: {}", op.mnemonic, why));
    };
    switch (op.imm) {
    case Imm::zero:
        if (imm != 0)
            return bad(
                fmt::format("imm is {:#x}, unused and must be zero", static_cast<uint32_t>(imm)));
        break;
    case Imm::sreg:
        if (imm < JAL_SR_SLICE || imm > JAL_SR_DISPATCH_NSLICES)
            return bad(fmt::format("special register {} is not known (0..{})", imm,
                                   int(JAL_SR_DISPATCH_NSLICES)));
        break;
    case Imm::tdesc: {
        uint32_t dt = JAL_TDESC_DTYPE(imm);
        if (dt < JAL_DT_F32 || dt > JAL_DT_I32)
            return bad(fmt::format("dtype {} is not a jal_dtype ({}..{})", dt, int(JAL_DT_F32),
                                   int(JAL_DT_I32)));
        break;
    }
    case Imm::sem:
        if (imm < 0 || imm >= JAL_ISA_SEMAPHORES)
            return bad(fmt::format("semaphore imm is {}, not a semaphore (q0..q15)", imm));
        break;
    case Imm::load_sem:
        if (!flagged_semaphore(imm, JAL_DMA_STREAMED))
            return bad(flagged_semaphore_error(imm, "JAL_DMA_STREAMED", JAL_DMA_STREAMED));
        break;
    case Imm::group_sem:
        if (!flagged_semaphore(imm, JAL_GROUP_MASK))
            return bad(flagged_semaphore_error(imm, "JAL_GROUP_MASK", JAL_GROUP_MASK));
        break;
    case Imm::count:
        if (imm < 0) return bad(fmt::format("count {} is negative", imm));
        break;
    case Imm::col:
        if (imm < 0) return bad(fmt::format("column {} is negative", imm));
        break;
    case Imm::k:
        if (imm < 1) return bad(fmt::format("k is {}, must be at least 1", imm));
        break;
    case Imm::cvt:
        if (imm != JAL_CVT_OCP && imm != JAL_CVT_GGML)
            return bad(fmt::format("conversion mode {} is not a jal_cvt_mode (0..1)", imm));
        break;
    case Imm::status:
        if (imm <= JAL_STATUS_OK || imm >= JAL_STATUS_COUNT_)
            return bad(fmt::format("status {} is not a failing jal_status (1..{})", imm,
                                   int(JAL_STATUS_COUNT_) - 1));
        break;
    case Imm::window:
        if (imm < 0) return bad(fmt::format("window {} is negative", imm));
        break;
    case Imm::layout:
        if (imm != 0 && imm != JAL_MMA_B_KMAJOR)
            return bad(fmt::format("layout {} is not 0 or JAL_MMA_B_KMAJOR (1)", imm));
        break;
    case Imm::any:
    case Imm::high:
    case Imm::offset:
    case Imm::branch:
    case Imm::f32:
    case Imm::bits:
        break;
    }
    return JAL_STATUS_OK;
}

}  // namespace

jal_status validate_instruction(uint64_t word, std::string* error)
{
    const detail::OpInfo* op = detail::find_op(JAL_INSN_OPCODE(word));
    if (!op)
        return reject(error, JAL_STATUS_INVALID_OPCODE,
                      fmt::format("opcode {:#04x} is not in the ISA", JAL_INSN_OPCODE(word)));
    const Reg roles[4] = {op->a, op->b, op->c, op->d};
    const unsigned values[4] = {JAL_INSN_A(word), JAL_INSN_B(word), JAL_INSN_C(word),
                                JAL_INSN_D(word)};
    static constexpr char kNames[4] = {'a', 'b', 'c', 'd'};
    for (int i = 0; i < 4; i++) {
        RegRange r = range_of(roles[i]);
        if (values[i] >= r.limit)
            return reject(
                error, JAL_STATUS_INVALID_FIELD,
                fmt::format("{}: field {} is {}, {}", op->mnemonic, kNames[i], values[i],
                            roles[i] == Reg::none ? r.what : fmt::format("not {}", r.what)));
    }
    return check_imm(*op, JAL_INSN_IMM(word), error);
}

}  // namespace jal::isa
