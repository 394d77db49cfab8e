// The tile ISA's assembler: text to a validated code object. It reads what jal-objdump
// (disasm.hpp) prints, so assemble(disassemble(x)) gives x back byte for byte, and a
// shorter hand-written form. Syntax (docs/tile-isa.md, "Assembler"):
//
//   kernel scale_rows          ; the kernel's name, first
//   l1_bytes 4096              ; optional (objdump's summary line sets it too)
//   arg address out            ; argument slots in order: u64, address or f32
//   arg u64 n
//   loop:                      ; a label; branches name it, or an absolute @pc
//     ld x1, [x2+8]
//     bne x1, x3, loop
//     end
//
// jal-objdump's lines are accepted as they are: the summary and offsets lines, "args:" /
// "[off] kind name" entries, "code:" and "pc: word  text" lines (the pc must be the next
// instruction and the word must be what the text assembles to). ';' starts a comment.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace jal::isa {

struct AsmError {
    unsigned line = 0;    // 1-based
    unsigned column = 0;  // 1-based, in bytes
    std::string message;  // without the position
    // "line:column: message"
    std::string text() const;
};

struct AsmResult {
    std::vector<uint8_t> object;  // a code object validate_code_object accepts; empty on error
    AsmError error;               // when object is empty
    bool ok() const { return !object.empty(); }
};

AsmResult assemble(std::string_view text);

}  // namespace jal::isa
