// The one table of the tile ISA's instructions: mnemonic, the role of each register field
// and of the immediate, and how the disassembler lays the operands out. The validator
// (validate.cpp) and the disassembler (disasm.cpp) both read it, so an opcode added here is
// checked and printed the same way everywhere. Roles follow include/jal/hw/isa.h.
#pragma once

#include <cstdint>

namespace jal::isa::detail {

// What a register field (a, b, c, d) names.
enum class Reg : uint8_t {
    none,  // unused: must be zero
    x,     // scalar register, < JAL_ISA_SCALAR_REGS
    t,     // tile register, < JAL_ISA_TILE_REGS
    q,     // semaphore, < JAL_ISA_SEMAPHORES
    flag,  // a constant 0 or 1 (STAGE's "ordered")
};

// What the 32-bit immediate means.
enum class Imm : uint8_t {
    zero,       // unused: must be zero
    any,        // a signed integer (LI, ADDI, MULI)
    high,       // LUI's upper word (printed in hex)
    offset,     // a byte offset of LD/ST/LW (alignment is checked when it runs)
    branch,     // instructions relative to this one; the object-level check bounds it
    sreg,       // enum jal_special_reg
    tdesc,      // JAL_TDESC_IMM(stride, dtype): dtype must be a jal_dtype
    sem,        // a semaphore number
    count,      // a semaphore count, >= 0
    col,        // a tile column, >= 0
    k,          // VTOPK's k, >= 1
    cvt,        // enum jal_cvt_mode
    status,     // TRAP's status: a failing enum jal_status
    window,     // VMASK's sliding window, >= 0 (0: none)
    f32,        // float bits (VSCALE, VADDS)
    bits,       // raw element bits (VFILL: F32 or I32 by the tile's dtype)
    layout,     // MMA's layout of b: 0 or JAL_MMA_B_KMAJOR (optional in assembly: "kmajor")
    load_sem,   // TLOAD's, TGATHER's: a semaphore, | JAL_DMA_STREAMED (ISA 1.5; "streamed")
    group_sem,  // SENDALL's, RECVALL's: a semaphore, | JAL_GROUP_MASK (ISA 1.7; "mask")
};

// How the disassembler lays out the operands.
enum class Syntax : uint8_t {
    plain,  // mnemonic a, b, c, d, imm (the fields in use)
    mem,    // ld x1, [x2+8]
    dma,    // tload t2, [x5], x6, q1  /  tgather t1, [x2], x3, t4, q0
    elem,   // tread x1, t2[x3, 4]
};

struct OpInfo {
    uint8_t opcode;
    const char* mnemonic;
    Reg a, b, c, d;
    Imm imm;
    Syntax syntax;
    // Field a is the scalar register the instruction writes (LUI also reads it: it keeps
    // the low word); otherwise every scalar register field is read.
    bool writes_a = false;
};

// The entry of `opcode`, or nullptr when the ISA has no such instruction.
const OpInfo* find_op(uint8_t opcode);

// Every entry, in opcode order (for tests that cover each opcode).
struct OpTable {
    const OpInfo* begin;
    const OpInfo* end;
};
OpTable all_ops();

}  // namespace jal::isa::detail
