// The tile ISA's disassembler, driven by the same opcode table as the validator
// (code_object.hpp). Syntax, one instruction a line:
//   add x1, x2, x3          registers x (scalar), t (tile), q (semaphore)
//   ld x1, [x2+8]           scalar memory: [base+offset]
//   tload t2, [x5], x6, q1  DMA: tile, [device address], row stride, semaphore
//   tread x1, t2[x3, 4]     tile element: tile[row register, column]
//   bne x1, x2, @7          branch targets are absolute instruction indices
//   movsr x1, slice         special registers, dtypes, conversion modes by name
// An unknown opcode prints as ".word 0x..."; a known one with a bad field prints decoded,
// followed by "  ; invalid: <the validator's message>".
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace jal::isa {

// "add", ..., or nullptr for an opcode the ISA does not have.
const char* opcode_name(uint8_t opcode);
// Every opcode of the ISA, ascending.
std::vector<uint8_t> known_opcodes();
// "f32", "bf16", ..., or nullptr.
const char* dtype_name(uint32_t dtype);
// "slice", "nslices", ..., or nullptr.
const char* special_reg_name(uint32_t sr);

// One instruction at instruction index `pc` (branch targets are printed as pc + imm).
std::string disassemble_instruction(uint64_t word, uint32_t pc);

// A whole code object: the validator's verdict, a header summary, the argument table,
// then every instruction as "  <pc>: <raw word>  <text>". A malformed object is dumped as
// far as its header makes it readable, after a line with the validator's message.
std::string disassemble(std::span<const uint8_t> code_object);

}  // namespace jal::isa
