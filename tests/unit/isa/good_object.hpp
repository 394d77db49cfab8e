// A small valid code object for the validator and disassembler tests: a loop with a
// forward and a backward branch, two arguments, a name.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <vector>

#include <jal/hw/isa.h>
#include <jal/isa/code_object.hpp>

namespace jal::test {

inline jal_code_arg make_arg(std::string_view name, uint32_t offset, uint32_t kind)
{
    jal_code_arg a;
    std::memset(&a, 0, sizeof a);
    std::memcpy(a.name, name.data(), name.size());
    a.offset = offset;
    a.kind = kind;
    return a;
}

inline std::vector<uint64_t> good_code()
{
    return {
        JAL_INSN(JAL_OP_MOVSR, 1, 0, 0, 0, JAL_SR_ARGS),  // 0
        JAL_INSN(JAL_OP_LD, 2, 1, 0, 0, 0),               // 1: n
        JAL_INSN(JAL_OP_LD, 3, 1, 0, 0, 8),               // 2: out
        JAL_INSN(JAL_OP_LI, 4, 0, 0, 0, 0),               // 3: i = 0
        JAL_INSN(JAL_OP_BGE, 4, 2, 0, 0, 4),              // 4: i >= n -> 8
        JAL_INSN(JAL_OP_ST, 4, 3, 0, 0, 0),               // 5
        JAL_INSN(JAL_OP_ADDI, 4, 4, 0, 0, 1),             // 6
        JAL_INSN(JAL_OP_JMP, 0, 0, 0, 0, -3),             // 7 -> 4
        JAL_INSN(JAL_OP_END, 0, 0, 0, 0, 0),              // 8
    };
}

inline std::vector<jal_code_arg> good_args()
{
    return {make_arg("n", 0, JAL_ARG_U64), make_arg("out", 8, JAL_ARG_ADDRESS)};
}

inline std::vector<uint8_t> good_object()
{
    auto code = good_code();
    auto args = good_args();
    return jal::isa::encode_code_object("count_up", code, 16, 4096, args);
}

inline jal_code_object_header header_of(const std::vector<uint8_t>& bytes)
{
    jal_code_object_header h;
    std::memcpy(&h, bytes.data(), sizeof h);
    return h;
}

// Replaces instruction `pc` and fixes the CRC, so only the instruction is wrong.
inline void rewrite_word(std::vector<uint8_t>& bytes, uint32_t pc, uint64_t word)
{
    jal_code_object_header h = header_of(bytes);
    std::memcpy(bytes.data() + h.code_offset + pc * 8, &word, 8);
    h.code_crc32 = jal::isa::crc32({bytes.data() + h.code_offset, size_t{h.code_words} * 8});
    std::memcpy(bytes.data(), &h, sizeof h);
}

}  // namespace jal::test
