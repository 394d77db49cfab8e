// Code objects (include/jal/hw/isa.h): the CRC, the validator the device runs before any
// slice starts, a parser for objects the validator accepted, and the encoder the builder
// and tests use. One table of opcodes and operand roles (isa/code/opcode_table.*) drives
// both the validator and the disassembler (disasm.hpp), so they cannot disagree.
//
// Statuses of a rejected object or instruction:
//   INVALID_OPCODE    an instruction's opcode is not in the ISA
//   INVALID_FIELD     a field holds a value outside its role (register number, unused
//                     field not zero, dtype, VCVT mode, VTOPK k, special register, TRAP
//                     status, branch target), bad magic, flags/reserved not zero, CRC
//                     mismatch, bad name or argument table entry
//   INVALID_LENGTH    sizes and offsets: header_size, total_size, sections outside the
//                     object or overlapping, misalignment, code_words 0, args_size
//   VERSION_MISMATCH  isa_major differs from ours, or isa_minor is newer than ours
// Error messages name the field (or the instruction index and word) and the value.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <jal/hw/isa.h>
#include <jal/hw/status.h>

namespace jal::isa {

// CRC-32 (IEEE 802.3, reflected, init and final xor 0xffffffff): crc32("123456789") is
// 0xcbf43926.
uint32_t crc32(std::span<const uint8_t> bytes);

// Checks one instruction on its own: the opcode is known, every register field is in
// range for its role, unused fields are zero, immediates with a meaning are valid.
// Branch targets need the program, so validate_code_object checks them. `error` may be
// null; on failure it receives a message naming the field and its value.
jal_status validate_instruction(uint64_t word, std::string* error);

// The scalar registers (bit r: x_r; x0 never) that `code` may read before writing them on
// some path from its first instruction, following branches (a target outside the code
// leaves it; END and TRAP end a path). An opcode outside the ISA counts as reading every
// register its fields could name. A linker clears exactly these where a program must start
// as if from a fresh dispatch's zeroed registers.
uint32_t registers_read_before_written(std::span<const uint64_t> code);

// Checks a whole code object as the device does before a dispatch runs (every rule of
// isa.h's struct jal_code_object_header and struct jal_code_arg, every instruction, every
// branch target inside the code). `error` may be null.
jal_status validate_code_object(std::span<const uint8_t> bytes, std::string* error);

// A code object unpacked into host-order values.
struct CodeObjectView {
    jal_code_object_header header{};
    std::vector<uint64_t> code;
    std::vector<jal_code_arg> args;
    std::string name;
};

// Validates, then unpacks. On failure `out` is left untouched and the status says why.
jal_status parse_code_object(std::span<const uint8_t> bytes, CodeObjectView* out,
                             std::string* error);

// Unpacks whatever the header's offsets and counts make readable, without validating
// (jal-objdump --force). Out-of-bounds sections come back empty or truncated.
CodeObjectView read_code_object_unchecked(std::span<const uint8_t> bytes);

// Lays out header, code, argument table and name (in that order, each aligned), fills the
// CRC and sizes, and returns the object. It does not validate: tests build malformed
// objects with it. args[i].name must be NUL-terminated within its 20 bytes.
std::vector<uint8_t> encode_code_object(std::string_view name, std::span<const uint64_t> code,
                                        uint32_t args_size, uint32_t l1_bytes,
                                        std::span<const jal_code_arg> args);

// Maximum lengths (isa.h): the kernel name, an argument's name, the argument table.
inline constexpr size_t kMaxNameLength = 63;
inline constexpr size_t kMaxArgNameLength = sizeof(jal_code_arg::name) - 1;
inline constexpr uint32_t kMaxArgs = 64;

}  // namespace jal::isa
