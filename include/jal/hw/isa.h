/* The tile ISA: what a slice executes. Interface 1.2 (draft; docs/tile-isa.md).
 *
 * Machine model, per slice (slices are the "thread blocks" of a dispatch):
 *  - 32 scalar registers x0..x31 of 64 bits (x0 reads 0): loops, addresses, arguments;
 *  - 16 tile registers t0..t15, each a descriptor of a 2-D tile in the slice's L1
 *    (L1 address, rows, columns, row stride in bytes, element format);
 *  - 16 semaphores q0..q15 (counters) that asynchronous engines signal;
 *  - four engines that run concurrently: scalar (in order, issues everything), DMA (tile
 *    loads/stores between HBM and L1, and gathers), matrix (MMA), vector (elementwise,
 *    reductions, conversions); plus the collective network (send/recv between slices).
 *    Engine ops are issued in program order; an op starts when its engine is free and the
 *    tiles it reads are no longer being written by an earlier op (the hardware tracks
 *    tile-register hazards), so double-buffering with two tile registers overlaps loads
 *    with compute. DMA completion is observed through semaphores (WAIT).
 *
 * Encoding: one 64-bit little-endian word per instruction.
 *   [63:56] opcode   [55:50] a   [49:44] b   [43:38] c   [37:32] d   [31:0] imm (signed)
 * Fields a-d name registers (scalar, tile or semaphore, by opcode) or small constants.
 * Branch targets are instruction offsets relative to the branch (imm). */
#ifndef JAL_HW_ISA_H
#define JAL_HW_ISA_H

#include "compat.h"

#define JAL_ISA_VERSION_MAJOR 1
#define JAL_ISA_VERSION_MINOR 0

#define JAL_ISA_SCALAR_REGS 32
#define JAL_ISA_TILE_REGS 16
#define JAL_ISA_SEMAPHORES 16
#define JAL_SLICE_L1_BYTES (4u << 20) /* (chosen) 4 MiB of tile memory per slice */

#define JAL_INSN_OPCODE(w) ((uint8_t)((w) >> 56))
#define JAL_INSN_A(w) ((uint8_t)(((w) >> 50) & 0x3f))
#define JAL_INSN_B(w) ((uint8_t)(((w) >> 44) & 0x3f))
#define JAL_INSN_C(w) ((uint8_t)(((w) >> 38) & 0x3f))
#define JAL_INSN_D(w) ((uint8_t)(((w) >> 32) & 0x3f))
#define JAL_INSN_IMM(w) ((int32_t)(uint32_t)(w))
#define JAL_INSN(op, a, b, c, d, imm)                                                     \
	(((uint64_t)(op) << 56) | ((uint64_t)((a) & 0x3f) << 50) | ((uint64_t)((b) & 0x3f) << 44) | \
	 ((uint64_t)((c) & 0x3f) << 38) | ((uint64_t)((d) & 0x3f) << 32) | (uint64_t)(uint32_t)(imm))

/* Element formats of tiles. MX formats are stored in blocks of 32 elements along a row
 * with one E8M0 scale (OCP MX v1.0); MXFP4 blocks are ggml's block_mxfp4 byte for byte,
 * so GGUF weights load without repacking. */
enum jal_dtype {
	JAL_DT_F32 = 1,
	JAL_DT_BF16 = 2,
	JAL_DT_F16 = 3,
	JAL_DT_MXFP8_E4M3 = 4, /* struct jal_block_mxfp8 */
	JAL_DT_MXFP8_E5M2 = 5, /* struct jal_block_mxfp8 */
	JAL_DT_MXFP4 = 6,      /* struct jal_block_mxfp4 */
	JAL_DT_Q8_0 = 7,       /* struct jal_block_q8_0: ggml's activation rounding */
	JAL_DT_I32 = 8,        /* indices (top-k, argmax, gather) */
};

#define JAL_MX_BLOCK 32

struct jal_block_mxfp4 {
	uint8_t e;      /* E8M0 scale: 2^(e-127); 0xff = NaN */
	uint8_t qs[16]; /* element j in the low nibble of qs[j], element j+16 in the high */
};
JAL_ASSERT_SIZE(struct jal_block_mxfp4, 17);

struct jal_block_mxfp8 {
	uint8_t e;
	uint8_t q[32];
};
JAL_ASSERT_SIZE(struct jal_block_mxfp8, 33);

struct jal_block_q8_0 {
	uint16_t d;     /* IEEE half scale */
	int8_t qs[32];
};
JAL_ASSERT_SIZE(struct jal_block_q8_0, 34);

/* Special registers read by MOVSR (imm). */
enum jal_special_reg {
	JAL_SR_SLICE = 0,       /* this slice's index within the dispatch, 0..n-1 */
	JAL_SR_NSLICES = 1,     /* slices in the dispatch */
	JAL_SR_LOGICAL_SLICE = 2, /* the chip's logical slice id (for placement decisions) */
	JAL_SR_ARGS = 3,        /* device address of the argument buffer */
	JAL_SR_CLOCK = 4,       /* modelled cycles since the dispatch started */
};

enum jal_opcode {
	/* scalar: a = rd, b = ra, c = rb */
	JAL_OP_END = 0x00,   /* the slice's program is done */
	JAL_OP_LI = 0x01,    /* rd = sign-extended imm */
	JAL_OP_LUI = 0x02,   /* rd = (rd & 0xffffffff) | imm << 32 */
	JAL_OP_MOVSR = 0x03, /* rd = special register imm */
	JAL_OP_ADD = 0x08, JAL_OP_SUB = 0x09, JAL_OP_MUL = 0x0a, JAL_OP_DIVU = 0x0b, JAL_OP_REMU = 0x0c,
	JAL_OP_AND = 0x0d, JAL_OP_OR = 0x0e, JAL_OP_XOR = 0x0f, JAL_OP_SHL = 0x10, JAL_OP_SHR = 0x11,
	JAL_OP_SLT = 0x12, JAL_OP_SLTU = 0x13, JAL_OP_MIN = 0x14, JAL_OP_MAX = 0x15,
	JAL_OP_ADDI = 0x18,  /* rd = ra + imm */
	JAL_OP_MULI = 0x19,  /* rd = ra * imm */
	JAL_OP_LD = 0x1a,    /* rd = 64-bit load from device address ra + imm */
	JAL_OP_ST = 0x1b,    /* 64-bit store of rd to device address ra + imm */
	/* control: a = ra, b = rb, imm = offset in instructions */
	JAL_OP_BEQ = 0x20, JAL_OP_BNE = 0x21, JAL_OP_BLT = 0x22, JAL_OP_BGE = 0x23, JAL_OP_BLTU = 0x24,
	JAL_OP_JMP = 0x25,
	JAL_OP_TRAP = 0x26,  /* fail the dispatch with status imm */
	/* tiles: a = td */
	JAL_OP_TDESC = 0x30, /* td = {L1 addr ra, rows rb, cols rc, dtype d, row stride imm bytes} */
	JAL_OP_TLOAD = 0x31, /* td <- device memory at ra, row stride rb bytes; signal q(d) */
	JAL_OP_TSTORE = 0x32,/* td -> device memory at ra, row stride rb bytes; signal q(d) */
	JAL_OP_TGATHER = 0x33,/* td row i <- row (index tile tb)[i] of the table at ra, rc bytes a row; q(d) */
	JAL_OP_WAIT = 0x34,  /* wait until q(a) >= imm, then subtract imm */
	JAL_OP_SIGNAL = 0x35,/* q(a) += imm */
	/* matrix: td (F32) += ta x tb^T (tb holds N rows of K: weight layout) */
	JAL_OP_MMA = 0x40,
	/* vector: a = td, b = ta, c = tb (row 1xN or column Mx1 broadcast), imm = f32 bits */
	JAL_OP_VADD = 0x50, JAL_OP_VSUB = 0x51, JAL_OP_VMUL = 0x52, JAL_OP_VMAX = 0x53, JAL_OP_VMIN = 0x54,
	JAL_OP_VFMA = 0x55,    /* td += ta * tb */
	JAL_OP_VSCALE = 0x56,  /* td = ta * imm */
	JAL_OP_VADDS = 0x57,   /* td = ta + imm */
	JAL_OP_VEXP = 0x58, JAL_OP_VRSQRT = 0x59, JAL_OP_VSILU = 0x5a, JAL_OP_VSIGMOID = 0x5b,
	JAL_OP_VRECIP = 0x5c, JAL_OP_VNEG = 0x5d,
	JAL_OP_VCLAMP = 0x5e,  /* td = clamp(ta, f32 in rb's low word, f32 in rc's low word) */
	JAL_OP_VREDSUM = 0x60, /* td (Mx1) = row sums of ta */
	JAL_OP_VREDMAX = 0x61, /* td (Mx1) = row maxima of ta */
	JAL_OP_VARGMAX = 0x62, /* td (Mx1, I32) = index of each row's maximum (lowest on ties) */
	JAL_OP_VTOPK = 0x63,   /* td (MxK, I32) = indices of each row's K = imm largest, descending */
	JAL_OP_VCVT = 0x64,    /* td = ta converted to td's dtype (rounding per docs/tile-isa.md) */
	JAL_OP_VCOPY = 0x65,
	JAL_OP_VFILL = 0x66,   /* td = imm (f32 bits) */
	/* collective network: a = tile, b = peer slice index (register) */
	JAL_OP_SEND = 0x70,    /* send tile ta to slice rb; signal q(d) when it has left */
	JAL_OP_RECV = 0x71,    /* receive into td from slice rb; signal q(d) when it arrived */
	JAL_OP_BARRIER = 0x72, /* every slice of the dispatch reaches it */
};

/* Code object: a kernel as the device loads it. All fields little-endian. */
#define JAL_CODE_MAGIC 0x314f4b4au /* 'JKO1' */

struct jal_code_object_header {
	uint32_t magic;
	uint16_t isa_major;     /* JAL_ISA_VERSION_MAJOR the code targets */
	uint16_t isa_minor;
	uint32_t header_size;   /* sizeof(struct jal_code_object_header) */
	uint32_t total_size;    /* header + code + name */
	uint32_t code_offset;   /* from the start of the object, 8-byte aligned */
	uint32_t code_words;    /* instructions */
	uint32_t name_offset;   /* NUL-terminated kernel name */
	uint32_t args_size;     /* bytes of the argument buffer the kernel reads */
	uint32_t l1_bytes;      /* tile memory the kernel uses, <= JAL_SLICE_L1_BYTES */
	uint32_t flags;         /* must be zero */
	uint32_t code_crc32;    /* CRC-32 (IEEE) of the code words */
	uint32_t reserved[5];
};
JAL_ASSERT_SIZE(struct jal_code_object_header, 64);

#endif
