// The disassembler: operand text from the opcode table's roles and syntax.
#include <jal/isa/disasm.hpp>

#include <cstring>

#include <fmt/format.h>

#include <jal/isa/code_object.hpp>

#include "opcode_table.hpp"

namespace jal::isa {
namespace {

using detail::Imm;
using detail::Reg;
using detail::Syntax;

std::string reg(Reg role, unsigned n)
{
    switch (role) {
    case Reg::x:
        return fmt::format("x{}", n);
    case Reg::t:
        return fmt::format("t{}", n);
    case Reg::q:
        return fmt::format("q{}", n);
    case Reg::flag:
        return n ? "ordered" : "unordered";
    case Reg::none:
        break;
    }
    return fmt::format("?{}", n);
}

float f32_of(int32_t imm)
{
    float f;
    std::memcpy(&f, &imm, sizeof f);
    return f;
}

const char* kind_name(uint32_t kind)
{
    switch (kind) {
    case JAL_ARG_U64:
        return "u64";
    case JAL_ARG_ADDRESS:
        return "address";
    case JAL_ARG_F32:
        return "f32";
    default:
        return "?";
    }
}

std::string imm_text(Imm role, int32_t imm, uint32_t pc)
{
    switch (role) {
    case Imm::zero:
        return {};
    case Imm::any:
    case Imm::count:
    case Imm::col:
    case Imm::k:
    case Imm::window:
    case Imm::offset:
        return fmt::format("{}", imm);
    case Imm::high:
        return fmt::format("{:#x}", static_cast<uint32_t>(imm));
    case Imm::bits:
        return fmt::format("{:#010x}", static_cast<uint32_t>(imm));
    case Imm::branch:
        return fmt::format("@{}", int64_t{pc} + imm);
    case Imm::sem:
        return fmt::format("q{}", imm);
    case Imm::load_sem:
        return fmt::format("q{}{}", imm & ~JAL_DMA_STREAMED,
                           imm & JAL_DMA_STREAMED ? ", streamed" : "");
    case Imm::group_sem:
        return fmt::format("q{}{}", imm & ~JAL_GROUP_MASK, imm & JAL_GROUP_MASK ? ", mask" : "");
    case Imm::f32:
        return fmt::format("{}", f32_of(imm));
    case Imm::sreg: {
        const char* n = special_reg_name(static_cast<uint32_t>(imm));
        return n ? n : fmt::format("sr{}", imm);
    }
    case Imm::tdesc: {
        const char* n = dtype_name(JAL_TDESC_DTYPE(imm));
        std::string s = n ? n : fmt::format("dtype{}", JAL_TDESC_DTYPE(imm));
        if (JAL_TDESC_STRIDE(imm)) s += fmt::format(", stride {}", JAL_TDESC_STRIDE(imm));
        return s;
    }
    case Imm::cvt:
        return imm == JAL_CVT_OCP    ? "ocp"
               : imm == JAL_CVT_GGML ? "ggml"
                                     : fmt::format("mode{}", imm);
    case Imm::status:
        return fmt::format("{} ({})", imm, jal_status_name(static_cast<uint32_t>(imm)));
    case Imm::layout:
        return imm == 0                  ? std::string{}
               : imm == JAL_MMA_B_KMAJOR ? "kmajor"
                                         : fmt::format("layout{}", imm);
    }
    return {};
}

std::string operands(const detail::OpInfo& op, uint64_t w, uint32_t pc)
{
    const unsigned a = JAL_INSN_A(w), b = JAL_INSN_B(w), c = JAL_INSN_C(w), d = JAL_INSN_D(w);
    const int32_t imm = JAL_INSN_IMM(w);
    switch (op.syntax) {
    case Syntax::mem: {
        const std::string at =
            imm == 0 ? fmt::format("[x{}]", b) : fmt::format("[x{}{:+}]", b, imm);
        return op.a == Reg::none ? at : fmt::format("x{}, {}", a, at);  // prefetch [x2+8]
    }
    case Syntax::dma:
        if (op.d != Reg::none)
            return fmt::format("t{}, [x{}], x{}, t{}, {}", a, b, c, d, imm_text(op.imm, imm, pc));
        return fmt::format("t{}, [x{}], x{}, {}", a, b, c, imm_text(op.imm, imm, pc));
    case Syntax::elem:
        return fmt::format("x{}, t{}[x{}, {}]", a, b, c, imm);
    case Syntax::plain:
        break;
    }
    std::string out;
    auto add = [&](const std::string& s) {
        if (s.empty()) return;
        if (!out.empty()) out += ", ";
        out += s;
    };
    const Reg roles[4] = {op.a, op.b, op.c, op.d};
    const unsigned values[4] = {a, b, c, d};
    for (int i = 0; i < 4; i++)
        if (roles[i] != Reg::none) add(reg(roles[i], values[i]));
    add(imm_text(op.imm, imm, pc));
    return out;
}

}  // namespace

const char* opcode_name(uint8_t opcode)
{
    const detail::OpInfo* op = detail::find_op(opcode);
    return op ? op->mnemonic : nullptr;
}

std::vector<uint8_t> known_opcodes()
{
    std::vector<uint8_t> out;
    for (const detail::OpInfo* op = detail::all_ops().begin; op != detail::all_ops().end; ++op)
        out.push_back(op->opcode);
    return out;
}

const char* dtype_name(uint32_t dtype)
{
    switch (dtype) {
    case JAL_DT_F32:
        return "f32";
    case JAL_DT_BF16:
        return "bf16";
    case JAL_DT_F16:
        return "f16";
    case JAL_DT_MXFP8_E4M3:
        return "mxfp8_e4m3";
    case JAL_DT_MXFP8_E5M2:
        return "mxfp8_e5m2";
    case JAL_DT_MXFP4:
        return "mxfp4";
    case JAL_DT_Q8_0:
        return "q8_0";
    case JAL_DT_I32:
        return "i32";
    default:
        return nullptr;
    }
}

const char* special_reg_name(uint32_t sr)
{
    switch (sr) {
    case JAL_SR_SLICE:
        return "slice";
    case JAL_SR_NSLICES:
        return "nslices";
    case JAL_SR_LOGICAL_SLICE:
        return "logical_slice";
    case JAL_SR_ARGS:
        return "args";
    case JAL_SR_CLOCK:
        return "clock";
    case JAL_SR_TIMING_ONLY:
        return "timing_only";
    case JAL_SR_DISPATCH_SLICE:
        return "dispatch_slice";
    case JAL_SR_DISPATCH_NSLICES:
        return "dispatch_nslices";
    default:
        return nullptr;
    }
}

std::string disassemble_instruction(uint64_t word, uint32_t pc)
{
    const detail::OpInfo* op = detail::find_op(JAL_INSN_OPCODE(word));
    if (!op) return fmt::format(".word {:#018x}", word);
    std::string text = op->mnemonic;
    std::string ops = operands(*op, word, pc);
    if (!ops.empty()) text += " " + ops;
    std::string why;
    if (validate_instruction(word, &why) != JAL_STATUS_OK) text += "  ; invalid: " + why;
    return text;
}

std::string disassemble(std::span<const uint8_t> code_object)
{
    std::string out;
    std::string why;
    jal_status st = validate_code_object(code_object, &why);
    if (st != JAL_STATUS_OK)
        out += fmt::format("; invalid code object ({}): {}\n", jal_status_name(st), why);
    const CodeObjectView v = read_code_object_unchecked(code_object);
    const jal_code_object_header& h = v.header;
    out += fmt::format("kernel {}\n", v.name);
    out += fmt::format(
        "  isa {}.{}, {} bytes, {} instructions, args_size {}, l1_bytes {}, crc32 {:#010x}\n",
        h.isa_major, h.isa_minor, h.total_size, h.code_words, h.args_size, h.l1_bytes,
        h.code_crc32);
    out += fmt::format("  offsets: code {}, args table {} ({} entries), name {}\n", h.code_offset,
                       h.args_table_offset, h.args_table_count, h.name_offset);
    if (!v.args.empty()) {
        out += "args:\n";
        for (const jal_code_arg& a : v.args)
            out += fmt::format("  [{:4}] {} {}\n", a.offset, kind_name(a.kind), a.name);
    }
    out += "code:\n";
    for (size_t pc = 0; pc < v.code.size(); pc++)
        out += fmt::format("  {:5}: {:016x}  {}\n", pc, v.code[pc],
                           disassemble_instruction(v.code[pc], static_cast<uint32_t>(pc)));
    return out;
}

}  // namespace jal::isa
