// The assembler's pieces of text: tokens that know their column, numbers, and the error it
// throws internally (assembler.cpp turns it into an AsmError with the line).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "opcode_table.hpp"

namespace jal::isa::detail {

struct Tok {
    std::string_view text;
    unsigned col = 1;  // of text's first byte, 1-based
};

struct AsmFailure {
    unsigned col;
    std::string message;
};

[[noreturn]] void fail_at(unsigned col, std::string message);
[[noreturn]] void fail_at(const Tok& t, std::string message);

// Without leading and trailing blanks (the column moves with the start).
Tok trim(Tok t);
// The first word (up to a blank) and the rest, both trimmed.
std::pair<Tok, Tok> split_word(Tok t);
// Operands separated by commas outside brackets and parentheses, each trimmed.
std::vector<Tok> split_operands(Tok t);

// Integers: decimal or 0x hex, an optional sign.
std::optional<int64_t> parse_int(std::string_view s);
// An integer in [lo, hi], or an error naming `what`.
int64_t expect_int(const Tok& t, int64_t lo, int64_t hi, std::string_view what);

// Hex digits, with or without 0x: an instruction word as jal-objdump prints it.
uint64_t raw_word(const Tok& t);

// One instruction (mnemonic and operands) at instruction index pc. A branch naming a label
// leaves its immediate 0 and sets `label` for the caller to resolve.
struct Assembled {
    uint64_t word = 0;
    std::optional<Tok> label;
};
Assembled assemble_instruction(Tok mnemonic, Tok operands, uint32_t pc);

}  // namespace jal::isa::detail
