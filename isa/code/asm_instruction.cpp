// One instruction's text to its word, by the opcode table's operand roles: the inverse of
// disasm.cpp's operands() and imm_text().
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/format.h>

#include <jal/hw/isa.h>
#include <jal/hw/status.h>
#include <jal/isa/disasm.hpp>

#include "asm_text.hpp"

namespace jal::isa::detail {
namespace {

const OpInfo* op_by_mnemonic(std::string_view m)
{
    for (const OpInfo* op = all_ops().begin; op != all_ops().end; ++op)
        if (m == op->mnemonic) return op;
    return nullptr;
}

unsigned reg(const Tok& t, Reg role)
{
    const char prefix = role == Reg::x ? 'x' : role == Reg::t ? 't' : 'q';
    const unsigned count = role == Reg::x   ? JAL_ISA_SCALAR_REGS
                           : role == Reg::t ? JAL_ISA_TILE_REGS
                                            : JAL_ISA_SEMAPHORES;
    const char* what = role == Reg::x   ? "a scalar register"
                       : role == Reg::t ? "a tile register"
                                        : "a semaphore";
    if (role == Reg::flag) {
        if (t.text == "ordered" || t.text == "1") return 1;
        if (t.text == "unordered" || t.text == "0") return 0;
        fail_at(t, fmt::format("expected ordered or unordered, found '{}'", t.text));
    }
    const auto n =
        t.text.size() > 1 && t.text[0] == prefix ? parse_int(t.text.substr(1)) : std::nullopt;
    if (!n || t.text[1] == '-' || t.text[1] == '+' || *n < 0 || *n >= count)
        fail_at(t, fmt::format("expected {} ({}0..{}{}), found '{}'", what, prefix, prefix,
                               count - 1, t.text));
    return static_cast<unsigned>(*n);
}

// A name from a table of `count` values, or prefix<number>.
template <typename NameOf>
int32_t named(const Tok& t, NameOf name_of, uint32_t count, std::string_view prefix,
              std::string_view what)
{
    for (uint32_t v = 0; v < count; ++v)
        if (const char* n = name_of(v); n && t.text == n) return static_cast<int32_t>(v);
    if (t.text.substr(0, prefix.size()) == prefix)
        if (auto v = parse_int(t.text.substr(prefix.size())); v && *v >= 0 && *v <= INT32_MAX)
            return static_cast<int32_t>(*v);
    fail_at(t, fmt::format("expected {}, found '{}'", what, t.text));
}

int32_t f32_bits(const Tok& t)
{
    const std::string s(t.text);
    char* end = nullptr;
    const float f = std::strtof(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size())
        fail_at(t, fmt::format("expected a float, found '{}'", t.text));
    int32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
}

const char* cvt_name(uint32_t v)
{
    return v == JAL_CVT_OCP ? "ocp" : v == JAL_CVT_GGML ? "ggml" : nullptr;
}

const char* layout_name(uint32_t v)
{
    return v == JAL_MMA_B_KMAJOR ? "kmajor" : nullptr;
}

// TRAP's status: a number, optionally followed by its name in parentheses (as printed).
int32_t status_imm(const Tok& t)
{
    auto [num, rest] = split_word(t);
    const int64_t v = expect_int(num, INT32_MIN, UINT32_MAX, "a status");
    if (!rest.text.empty() && (rest.text.front() != '(' || rest.text.back() != ')'))
        fail_at(rest, fmt::format("expected '(name)' after the status, found '{}'", rest.text));
    return static_cast<int32_t>(v);
}

struct Operands {
    const std::vector<Tok>& ops;
    size_t next = 0;
    Tok end_tok;  // where a missing operand is reported
    const Tok& take(std::string_view what)
    {
        if (next >= ops.size()) fail_at(end_tok, fmt::format("missing operand: {}", what));
        return ops[next++];
    }
};

int32_t immediate(Imm role, Operands& in, uint32_t pc, Assembled& out)
{
    switch (role) {
    case Imm::zero:
        return 0;
    case Imm::any:
    case Imm::offset:
        return static_cast<int32_t>(
            expect_int(in.take("an immediate"), INT32_MIN, INT32_MAX, "an immediate"));
    case Imm::count:
    case Imm::col:
    case Imm::window:
        return static_cast<int32_t>(expect_int(in.take("a count"), 0, INT32_MAX, "a count"));
    case Imm::k:
        return static_cast<int32_t>(expect_int(in.take("k"), 1, INT32_MAX, "k"));
    case Imm::high:
    case Imm::bits:
        return static_cast<int32_t>(static_cast<uint32_t>(
            expect_int(in.take("a 32-bit value"), INT32_MIN, UINT32_MAX, "a 32-bit value")));
    case Imm::branch: {
        const Tok& t = in.take("a branch target");
        if (t.text.size() > 1 && t.text[0] == '@')
            return static_cast<int32_t>(
                expect_int({t.text.substr(1), t.col + 1}, 0, INT32_MAX, "a target pc") - pc);
        out.label = t;
        return 0;
    }
    case Imm::sem:
    case Imm::load_sem:  // only in dma syntax (special_syntax), which takes "streamed" itself
        return static_cast<int32_t>(reg(in.take("a semaphore"), Reg::q));
    case Imm::group_sem: {  // optional: "mask" (x[b] a mask of dispatch slices)
        auto imm = static_cast<int32_t>(reg(in.take("a semaphore"), Reg::q));
        if (in.next < in.ops.size()) {
            const Tok& f = in.take("mask");
            if (f.text != "mask") fail_at(f, fmt::format("expected mask, found '{}'", f.text));
            imm |= JAL_GROUP_MASK;
        }
        return imm;
    }
    case Imm::f32:
        return f32_bits(in.take("a float"));
    case Imm::sreg:
        return named(in.take("a special register"), special_reg_name, 64, "sr",
                     "a special register (slice, nslices, logical_slice, args, clock, ...)");
    case Imm::cvt:
        return named(in.take("a conversion mode"), cvt_name, 2, "mode", "ocp or ggml");
    case Imm::layout:  // optional: b in the weight layout unless "kmajor" follows
        if (in.next >= in.ops.size()) return 0;
        return named(in.take("a layout"), layout_name, 2, "layout", "kmajor");
    case Imm::status:
        return status_imm(in.take("a status"));
    case Imm::tdesc: {
        const auto dtype = static_cast<uint32_t>(
            named(in.take("a dtype"), dtype_name, 16, "dtype", "a dtype (f32, bf16, mxfp4, ...)"));
        uint32_t stride = 0;
        if (in.next < in.ops.size() && in.ops[in.next].text.substr(0, 7) == "stride ") {
            const Tok& t = in.ops[in.next++];
            stride = static_cast<uint32_t>(
                expect_int(trim({t.text.substr(7), t.col + 7}), 0, 0x0fffffff, "a stride"));
        }
        return JAL_TDESC_IMM(stride, dtype);
    }
    }
    return 0;
}

// "[xB]", "[xB+8]", "[xB-8]": the base register and the offset.
std::pair<unsigned, int32_t> memory_operand(const Tok& t)
{
    if (t.text.size() < 3 || t.text.front() != '[' || t.text.back() != ']')
        fail_at(t, fmt::format("expected [xN] or [xN+offset], found '{}'", t.text));
    const std::string_view in = t.text.substr(1, t.text.size() - 2);
    const size_t sign = in.find_first_of("+-");
    const Tok base{in.substr(0, sign), t.col + 1};
    int32_t offset = 0;
    if (sign != std::string_view::npos)
        offset = static_cast<int32_t>(expect_int({in.substr(sign), t.col + 1 + unsigned(sign)},
                                                 INT32_MIN, INT32_MAX, "an offset"));
    return {reg(trim(base), Reg::x), offset};
}

uint64_t special_syntax(const OpInfo& op, Operands& in)
{
    unsigned a = 0, b = 0, c = 0, d = 0;
    int32_t imm = 0;
    if (op.syntax == Syntax::mem) {
        if (op.a != Reg::none) a = reg(in.take("a register"), Reg::x);
        std::tie(b, imm) = memory_operand(in.take("[address]"));
    } else if (op.syntax == Syntax::dma) {
        a = reg(in.take("a tile"), Reg::t);
        b = memory_operand(in.take("[address]")).first;
        c = reg(in.take("a stride register"), Reg::x);
        if (op.d != Reg::none) d = reg(in.take("an index tile"), Reg::t);
        imm = static_cast<int32_t>(reg(in.take("a semaphore"), Reg::q));
        if (op.imm == Imm::load_sem && in.next < in.ops.size()) {  // optional: "streamed"
            const Tok& f = in.take("streamed");
            if (f.text != "streamed")
                fail_at(f, fmt::format("expected streamed, found '{}'", f.text));
            imm |= JAL_DMA_STREAMED;
        }
    } else {  // elem: xA, tB[xC, col]
        a = reg(in.take("a register"), Reg::x);
        const Tok& e = in.take("tile[row, column]");
        const size_t open = e.text.find('[');
        if (open == std::string_view::npos || e.text.back() != ']')
            fail_at(e, fmt::format("expected tN[xM, column], found '{}'", e.text));
        b = reg({e.text.substr(0, open), e.col}, Reg::t);
        const std::vector<Tok> inner = split_operands(
            {e.text.substr(open + 1, e.text.size() - open - 2), e.col + unsigned(open) + 1});
        if (inner.size() != 2) fail_at(e, "expected tN[xM, column]");
        c = reg(inner[0], Reg::x);
        imm = static_cast<int32_t>(expect_int(inner[1], 0, INT32_MAX, "a column"));
    }
    return JAL_INSN(op.opcode, a, b, c, d, imm);
}

}  // namespace

uint64_t raw_word(const Tok& t)
{
    std::string_view s = t.text;
    if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) s.remove_prefix(2);
    uint64_t v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v, 16);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size())
        fail_at(t, fmt::format("expected a 64-bit hex word, found '{}'", t.text));
    return v;
}

Assembled assemble_instruction(Tok mnemonic, Tok operands, uint32_t pc)
{
    Assembled out;
    const std::vector<Tok> ops = split_operands(operands);
    Operands in{ops, 0, {"", operands.col + static_cast<unsigned>(operands.text.size())}};
    if (mnemonic.text == ".word") {
        out.word = raw_word(in.take("a 64-bit word"));
    } else {
        const OpInfo* op = op_by_mnemonic(mnemonic.text);
        if (!op) fail_at(mnemonic, fmt::format("unknown instruction '{}'", mnemonic.text));
        if (op->syntax != Syntax::plain) {
            out.word = special_syntax(*op, in);
        } else {
            const Reg roles[4] = {op->a, op->b, op->c, op->d};
            unsigned v[4] = {0, 0, 0, 0};
            for (int i = 0; i < 4; ++i)
                if (roles[i] != Reg::none) v[i] = reg(in.take("a register"), roles[i]);
            const int32_t imm = immediate(op->imm, in, pc, out);
            out.word = JAL_INSN(op->opcode, v[0], v[1], v[2], v[3], imm);
        }
    }
    if (in.next < ops.size())
        fail_at(ops[in.next], fmt::format("unexpected operand '{}'", ops[in.next].text));
    return out;
}

}  // namespace jal::isa::detail
