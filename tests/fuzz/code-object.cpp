// fuzz-code-object: the code-object validator and decoder (isa/code) and the emulator's
// decode path (emu/cp/program_cache) on arbitrary objects.
//
// Input: one byte of flags, then the object. Flag bit 0 recomputes the code CRC the header
// names (when the code lies inside the input), so mutations reach the checks behind it.
//
// Checks: the verdict is one the validator documents, with a message when it rejects;
// parse_code_object and the emulator's program cache give the same verdict; an accepted
// object's instructions each validate on their own and branch inside the code, its
// unchecked read equals its parse, and encoding the parsed parts again gives an object that
// validates and parses to the same parts. The disassembler handles anything.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <jal/isa/code_object.hpp>
#include <jal/isa/disasm.hpp>

#include "emu/cp/program_cache.hpp"
#include "fuzz_check.hpp"
#include "isa/code/opcode_table.hpp"

namespace {

using jal::isa::CodeObjectView;

bool documented(jal_status st)
{
    return st == JAL_STATUS_OK || st == JAL_STATUS_INVALID_OPCODE ||
           st == JAL_STATUS_INVALID_FIELD || st == JAL_STATUS_INVALID_LENGTH ||
           st == JAL_STATUS_VERSION_MISMATCH;
}

void fix_crc(std::vector<uint8_t>& bytes)
{
    jal_code_object_header h;
    if (bytes.size() < sizeof h) return;
    std::memcpy(&h, bytes.data(), sizeof h);
    const uint64_t end = uint64_t{h.code_offset} + uint64_t{h.code_words} * 8;
    if (end > bytes.size()) return;
    h.code_crc32 = jal::isa::crc32({bytes.data() + h.code_offset, size_t{h.code_words} * 8});
    std::memcpy(bytes.data(), &h, sizeof h);
}

bool same_parts(const CodeObjectView& a, const CodeObjectView& b)
{
    return a.code == b.code && a.name == b.name && a.args.size() == b.args.size() &&
           (a.args.empty() ||
            std::memcmp(a.args.data(), b.args.data(), a.args.size() * sizeof(jal_code_arg)) == 0) &&
           a.header.args_size == b.header.args_size && a.header.l1_bytes == b.header.l1_bytes;
}

void check_accepted(std::span<const uint8_t> bytes, const CodeObjectView& v)
{
    FUZZ_CHECK(v.code.size() == v.header.code_words && !v.code.empty());
    FUZZ_CHECK(v.name.size() <= jal::isa::kMaxNameLength);
    FUZZ_CHECK(v.args.size() == v.header.args_table_count);
    for (size_t pc = 0; pc < v.code.size(); ++pc) {
        FUZZ_CHECK(jal::isa::validate_instruction(v.code[pc], nullptr) == JAL_STATUS_OK);
        const auto* op = jal::isa::detail::find_op(JAL_INSN_OPCODE(v.code[pc]));
        if (op->imm == jal::isa::detail::Imm::branch) {
            const int64_t target = static_cast<int64_t>(pc) + JAL_INSN_IMM(v.code[pc]);
            FUZZ_CHECK(target >= 0 && target < static_cast<int64_t>(v.code.size()));
        }
    }
    const CodeObjectView unchecked = jal::isa::read_code_object_unchecked(bytes);
    FUZZ_CHECK(same_parts(unchecked, v));

    const std::vector<uint8_t> again =
        jal::isa::encode_code_object(v.name, v.code, v.header.args_size, v.header.l1_bytes, v.args);
    CodeObjectView w;
    std::string why;
    const jal_status st = jal::isa::parse_code_object(again, &w, &why);
    if (st != JAL_STATUS_OK) std::fprintf(stderr, "re-encoded object rejected: %s\n", why.c_str());
    FUZZ_CHECK(st == JAL_STATUS_OK);
    FUZZ_CHECK(same_parts(w, v));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1) return 0;
    std::vector<uint8_t> bytes(data + 1, data + size);
    if (data[0] & 1) fix_crc(bytes);

    std::string why;
    const jal_status st = jal::isa::validate_code_object(bytes, &why);
    FUZZ_CHECK(documented(st));
    FUZZ_CHECK((st == JAL_STATUS_OK) == why.empty());

    CodeObjectView v;
    v.name = "untouched";
    FUZZ_CHECK(jal::isa::parse_code_object(bytes, &v, nullptr) == st);
    if (st != JAL_STATUS_OK) FUZZ_CHECK(v.name == "untouched" && v.code.empty());

    jal::emu::ProgramCache cache;
    uint32_t cache_status = ~0u;
    const auto program = cache.get(1, bytes, cache_status);
    FUZZ_CHECK(cache_status == static_cast<uint32_t>(st));
    FUZZ_CHECK((program != nullptr) == (st == JAL_STATUS_OK));

    const std::string text = jal::isa::disassemble(bytes);
    FUZZ_CHECK((text.rfind("; invalid code object", 0) == 0) == (st != JAL_STATUS_OK));
    if (st != JAL_STATUS_OK) return 0;

    check_accepted(bytes, v);
    FUZZ_CHECK(program->code.size() == v.code.size());
    FUZZ_CHECK(program->l1_bytes == v.header.l1_bytes && program->args_size == v.header.args_size);
    for (size_t pc = 0; pc < v.code.size(); ++pc)
        FUZZ_CHECK(program->code[pc].op == JAL_INSN_OPCODE(v.code[pc]) &&
                   program->code[pc].imm == JAL_INSN_IMM(v.code[pc]));
    return 0;
}
