// The assembler's lines: the kernel's name and sizes, arguments, labels, instructions and
// jal-objdump's listing lines; then labels are resolved and the object encoded and checked.
#include <jal/isa/assembler.hpp>

#include <cctype>
#include <cstring>
#include <map>
#include <optional>

#include <fmt/format.h>

#include <jal/hw/isa.h>
#include <jal/isa/code_object.hpp>

#include "asm_text.hpp"

namespace jal::isa {

std::string AsmError::text() const
{
    return fmt::format("{}:{}: {}", line, column, message);
}

namespace detail {
namespace {

struct Source {
    unsigned line;
    Tok tok;
};

struct Program {
    std::optional<std::string> name;
    unsigned name_line = 0;
    std::optional<uint32_t> args_size;
    uint32_t l1_bytes = 0;
    std::vector<jal_code_arg> args;
    std::vector<uint64_t> code;
    std::vector<Source> where;  // of each instruction's mnemonic
    std::map<std::string, uint32_t, std::less<>> labels;
    struct Fixup {
        uint32_t pc;
        Source label;
    };
    std::vector<Fixup> fixups;
    struct Listed {
        uint32_t pc;
        uint64_t word;
        Source at;
    };
    std::vector<Listed> listed;  // jal-objdump's words, checked once labels are resolved
};

bool is_identifier(std::string_view s)
{
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.') return false;
    return true;
}

uint32_t arg_kind(const Tok& t)
{
    if (t.text == "u64") return JAL_ARG_U64;
    if (t.text == "address") return JAL_ARG_ADDRESS;
    if (t.text == "f32") return JAL_ARG_F32;
    fail_at(t, fmt::format("expected an argument kind (u64, address, f32), found '{}'", t.text));
}

void add_arg(Program& p, const Tok& kind, const Tok& name, std::optional<int64_t> offset)
{
    jal_code_arg a{};
    a.kind = arg_kind(kind);
    if (name.text.empty()) fail_at(name, "missing argument name");
    if (name.text.size() > kMaxArgNameLength)
        fail_at(name, fmt::format("argument name '{}' is longer than {} bytes", name.text,
                                  kMaxArgNameLength));
    std::memcpy(a.name, name.text.data(), name.text.size());
    a.offset = static_cast<uint32_t>(offset ? *offset : int64_t{8} * int64_t(p.args.size()));
    p.args.push_back(a);
}

// "isa 1.2, 80 bytes, 2 instructions, args_size 8, l1_bytes 0, crc32 0x...": the version
// must be ours; args_size and l1_bytes are read; the rest follows from the code.
void summary_line(Program& p, const Tok& line)
{
    for (const Tok& item : split_operands(line)) {
        auto [key, value] = split_word(item);
        if (key.text == "isa") {
            const std::string ours =
                fmt::format("{}.{}", JAL_ISA_VERSION_MAJOR, JAL_ISA_VERSION_MINOR);
            if (value.text != ours)
                fail_at(value,
                        fmt::format("isa {}: this assembler writes isa {}", value.text, ours));
        } else if (key.text == "args_size") {
            p.args_size = static_cast<uint32_t>(expect_int(value, 0, UINT32_MAX, "args_size"));
        } else if (key.text == "l1_bytes") {
            p.l1_bytes = static_cast<uint32_t>(expect_int(value, 0, UINT32_MAX, "l1_bytes"));
        }
    }
}

void instruction(Program& p, unsigned line, Tok text)
{
    auto [mnemonic, operands] = split_word(text);
    const auto pc = static_cast<uint32_t>(p.code.size());
    Assembled a = assemble_instruction(mnemonic, operands, pc);
    if (a.label) p.fixups.push_back({pc, {line, *a.label}});
    p.code.push_back(a.word);
    p.where.push_back({line, mnemonic});
}

// "12: 0123456789abcdef  add x1, x2, x3" (jal-objdump): the pc must come next.
void listing_line(Program& p, unsigned line, const Tok& pc_tok, Tok rest)
{
    const int64_t pc = expect_int(pc_tok, 0, INT32_MAX, "an instruction index");
    if (pc != static_cast<int64_t>(p.code.size()))
        fail_at(pc_tok,
                fmt::format("instruction {} listed where instruction {} comes", pc, p.code.size()));
    auto [word, text] = split_word(rest);
    if (text.text.empty()) fail_at(rest, "expected 'WORD  instruction' after the index");
    p.listed.push_back({static_cast<uint32_t>(pc), raw_word(word), {line, word}});
    instruction(p, line, text);
}

// Lines that name the kernel, its sizes or its arguments; false for anything else.
bool header_line(Program& p, unsigned line, const Tok& text)
{
    auto [word, rest] = split_word(text);
    if (word.text == "kernel") {
        if (p.name)
            fail_at(word, fmt::format("a second 'kernel' (the first is on line {})", p.name_line));
        if (rest.text.empty()) fail_at(rest, "missing kernel name");
        p.name = std::string(rest.text);
        p.name_line = line;
    } else if (word.text == "isa") {
        summary_line(p, text);
    } else if (word.text == "offsets:" || word.text == "args:" || word.text == "code:") {
        // objdump's section headings and layout: the encoder recomputes the layout.
    } else if (word.text == "l1_bytes") {
        p.l1_bytes = static_cast<uint32_t>(expect_int(rest, 0, UINT32_MAX, "l1_bytes"));
    } else if (word.text == "args_size") {
        p.args_size = static_cast<uint32_t>(expect_int(rest, 0, UINT32_MAX, "args_size"));
    } else if (word.text == "arg") {
        auto [kind, name] = split_word(rest);
        add_arg(p, kind, name, std::nullopt);
    } else {
        return false;
    }
    return true;
}

// objdump's argument entry "[   8] u64 n" (the offset may be padded inside the brackets).
bool arg_entry(Program& p, const Tok& text)
{
    if (text.text.empty() || text.text.front() != '[') return false;
    const size_t close = text.text.find(']');
    if (close == std::string_view::npos) fail_at(text, "expected '[offset] kind name'");
    const Tok off = trim({text.text.substr(1, close - 1), text.col + 1});
    auto [kind, name] = split_word({text.text.substr(close + 1), text.col + unsigned(close) + 1});
    add_arg(p, kind, name, expect_int(off, 0, UINT32_MAX, "an argument offset"));
    return true;
}

void line(Program& p, unsigned number, std::string_view raw)
{
    Tok text = trim({raw, 1});
    // A kernel's name is the rest of its line, ';' included.
    if (text.text.substr(0, 7) == "kernel " || text.text == "kernel") {
        header_line(p, number, text);
        return;
    }
    text = trim({text.text.substr(0, text.text.find(';')), text.col});
    if (text.text.empty()) return;
    if (arg_entry(p, text) || header_line(p, number, text)) return;
    auto [word, rest] = split_word(text);
    if (word.text.back() == ':' && word.text.size() > 1) {
        const Tok head{word.text.substr(0, word.text.size() - 1), word.col};
        if (parse_int(head.text)) return listing_line(p, number, head, rest);
        if (!is_identifier(head.text))
            fail_at(head, fmt::format("'{}' is not a label name", head.text));
        if (auto [it, fresh] = p.labels.emplace(head.text, uint32_t(p.code.size())); !fresh)
            fail_at(head, fmt::format("label '{}' is defined twice", head.text));
        if (!rest.text.empty()) instruction(p, number, rest);
        return;
    }
    instruction(p, number, text);
}

void resolve(Program& p)
{
    for (const Program::Fixup& f : p.fixups) {
        auto it = p.labels.find(f.label.tok.text);
        if (it == p.labels.end())
            throw AsmError{f.label.line, f.label.tok.col,
                           fmt::format("undefined label '{}'", f.label.tok.text)};
        const int64_t rel = int64_t{it->second} - int64_t{f.pc};
        p.code[f.pc] = (p.code[f.pc] & ~uint64_t{0xffffffff}) | static_cast<uint32_t>(rel);
    }
    for (const Program::Listed& l : p.listed)
        if (p.code[l.pc] != l.word)
            throw AsmError{l.at.line, l.at.tok.col,
                           fmt::format("the listing says {:016x}, the text assembles to {:016x}",
                                       l.word, p.code[l.pc])};
}

// The validator's verdict on each instruction, and branch targets inside the code, at
// the instruction's line.
void check_instructions(const Program& p)
{
    for (size_t pc = 0; pc < p.code.size(); ++pc) {
        const Source& at = p.where[pc];
        std::string why;
        if (validate_instruction(p.code[pc], &why) != JAL_STATUS_OK)
            throw AsmError{at.line, at.tok.col, why};
        const detail::OpInfo* op = detail::find_op(JAL_INSN_OPCODE(p.code[pc]));
        const int64_t target = int64_t(pc) + JAL_INSN_IMM(p.code[pc]);
        if (op && op->imm == detail::Imm::branch &&
            (target < 0 || target >= int64_t(p.code.size())))
            throw AsmError{at.line, at.tok.col,
                           fmt::format("branch target @{} is outside the code (0..{})", target,
                                       p.code.size() - 1)};
    }
}

std::vector<uint8_t> finish(Program& p)
{
    if (!p.name) throw AsmError{1, 1, "no 'kernel NAME' line: every program names its kernel"};
    if (p.code.empty()) throw AsmError{p.name_line, 1, "the kernel has no instructions"};
    resolve(p);
    check_instructions(p);
    uint32_t args_size = 0;
    for (const jal_code_arg& a : p.args) args_size = std::max(args_size, a.offset + 8);
    std::vector<uint8_t> object =
        encode_code_object(*p.name, p.code, p.args_size.value_or(args_size), p.l1_bytes, p.args);
    std::string why;
    if (validate_code_object(object, &why) != JAL_STATUS_OK)
        throw AsmError{p.name_line, 1, "invalid code object: " + why};
    return object;
}

}  // namespace
}  // namespace detail

AsmResult assemble(std::string_view text)
{
    AsmResult r;
    detail::Program p;
    unsigned number = 0;
    try {
        for (size_t pos = 0; pos <= text.size();) {
            size_t end = text.find('\n', pos);
            if (end == std::string_view::npos) end = text.size();
            ++number;
            try {
                detail::line(p, number, text.substr(pos, end - pos));
            } catch (const detail::AsmFailure& f) {
                throw AsmError{number, f.col, f.message};
            }
            pos = end + 1;
        }
        r.object = detail::finish(p);
    } catch (const AsmError& e) {
        r.error = e;
        r.object.clear();
    }
    return r;
}

}  // namespace jal::isa
