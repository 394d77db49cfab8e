// One decoded instruction of the tile ISA (include/jal/hw/isa.h): the fields unpacked once
// per dispatch, so slices never re-decode a word.
#pragma once

#include "jal/hw/isa.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace jal::emu::exec {

struct Insn {
    std::uint8_t op, a, b, c, d;
    std::int32_t imm;
};

inline Insn decode(std::uint64_t w)
{
    return {JAL_INSN_OPCODE(w), JAL_INSN_A(w), JAL_INSN_B(w),
            JAL_INSN_C(w),      JAL_INSN_D(w), JAL_INSN_IMM(w)};
}

// What a dispatch runs: the decoded code and the code object's resource limits.
struct Program {
    std::vector<Insn> code;
    std::uint32_t l1_bytes = JAL_SLICE_L1_BYTES;  // tiles must lie below this
    std::uint32_t args_size = 0;
    std::string name;  // the code object's (traces)

    static Program from_words(std::span<const std::uint64_t> words,
                              std::uint32_t l1_bytes = JAL_SLICE_L1_BYTES)
    {
        Program p;
        p.code.reserve(words.size());
        for (std::uint64_t w : words) p.code.push_back(decode(w));
        p.l1_bytes = l1_bytes;
        return p;
    }
};

}  // namespace jal::emu::exec
