/* The tile ISA: what a slice executes. Interface 1.5 (docs/tile-isa.md).
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
 * Branch targets are instruction offsets relative to the branch (imm). Fields an opcode
 * does not use must be zero (the validator rejects anything else).
 *
 * Functional semantics are sequential: every instruction's effects are complete before the
 * next one's begin. That is exactly what the hardware computes, because engine ops wait
 * for the tiles they touch; asynchrony is visible only in time (the timing model), never
 * in data. Semaphores therefore only order things against other slices and the clock. */
#ifndef JAL_HW_ISA_H
#define JAL_HW_ISA_H

#include "compat.h"

#define JAL_ISA_VERSION_MAJOR 1
#define JAL_ISA_VERSION_MINOR 7

#define JAL_ISA_SCALAR_REGS 32
#define JAL_ISA_TILE_REGS 16
#define JAL_ISA_SEMAPHORES 16
#define JAL_SLICE_L1_BYTES (4u << 20) /* (chosen) 4 MiB of tile memory per slice */
/* (chosen) The scalar unit's data cache: direct-mapped, this many lines of this many bytes.
 * Results never depend on it; what a program reads ahead to hide misses does. */
#define JAL_ISA_SCALAR_CACHE_LINES 64
#define JAL_ISA_SCALAR_LINE_BYTES 64

#define JAL_INSN_OPCODE(w) ((uint8_t)((w) >> 56))
#define JAL_INSN_A(w) ((uint8_t)(((w) >> 50) & 0x3f))
#define JAL_INSN_B(w) ((uint8_t)(((w) >> 44) & 0x3f))
#define JAL_INSN_C(w) ((uint8_t)(((w) >> 38) & 0x3f))
#define JAL_INSN_D(w) ((uint8_t)(((w) >> 32) & 0x3f))
#define JAL_INSN_IMM(w) ((int32_t)(uint32_t)(w))
#define JAL_INSN(op, a, b, c, d, imm)                                                       \
    (((uint64_t)(op) << 56) | ((uint64_t)((a)&0x3f) << 50) | ((uint64_t)((b)&0x3f) << 44) | \
     ((uint64_t)((c)&0x3f) << 38) | ((uint64_t)((d)&0x3f) << 32) | (uint64_t)(uint32_t)(imm))

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
    uint16_t d; /* IEEE half scale */
    int8_t qs[32];
};
JAL_ASSERT_SIZE(struct jal_block_q8_0, 34);

/* SEND/RECV peer (x[b]) JAL_PEER_DISPATCH + d (ISA 1.3): dispatch slice d, also inside a
 * stage (where a plain peer is a rank of the stage): a stage on some slices exchanges with
 * the slices of a stage on others. */
#define JAL_PEER_DISPATCH (1u << 16)

/* MMA's imm (ISA 1.4): the layout of t(c). 0: N rows of K (the weight layout);
 * JAL_MMA_B_KMAJOR: K rows of N (F32, BF16 or F16 only), the same products in the same
 * order, so the same bits. A GEMV over a K-major b reads one row of N per k, where the weight
 * layout's reads run down N rows side by side (docs/tile-isa.md, "MMA"). */
#define JAL_MMA_B_KMAJOR 1

/* TLOAD's and TGATHER's imm (ISA 1.5): the semaphore, or the semaphore | JAL_DMA_STREAMED
 * for a streamed load. The program promises that the memory it reads does not change until
 * the tile's last read, so the device may read it at any time from the load to each read of
 * the tile (docs/tile-isa.md, "Streamed loads"): weights, which an MMA then reads as b
 * straight from HBM. The semaphore is imm & ~JAL_DMA_STREAMED. */
#define JAL_DMA_STREAMED 0x100

/* SENDALL's and RECVALL's imm (ISA 1.7): the semaphore, or the semaphore | JAL_GROUP_MASK:
 * then x[b] is a mask of the dispatch's slices (bit d: dispatch slice d, at least one, none
 * past the dispatch's last), the group its members in dispatch order. A stage that takes
 * its input from some slices of another (a GEMM beside the attention) receives it in one
 * RECVALL. The semaphore is imm & ~JAL_GROUP_MASK. */
#define JAL_GROUP_MASK 0x100

/* Special registers read by MOVSR (imm). */
enum jal_special_reg {
    JAL_SR_SLICE = 0,         /* this slice's index within the dispatch, 0..n-1 */
    JAL_SR_NSLICES = 1,       /* slices in the dispatch */
    JAL_SR_LOGICAL_SLICE = 2, /* the chip's logical slice id (for placement decisions) */
    JAL_SR_ARGS = 3,          /* device address of the argument buffer */
    JAL_SR_CLOCK = 4,         /* modelled cycles since the dispatch started */
    JAL_SR_TIMING_ONLY = 5,   /* 1 when the dispatch runs for time only (no data) */
    /* ISA 1.3: the whole dispatch's numbering, also inside a stage (where SR_SLICE and
     * SR_NSLICES number the stage's slices): what a stage reads of a table indexed for the
     * stage after it, on other slices. Outside a stage equal to SR_SLICE, SR_NSLICES. */
    JAL_SR_DISPATCH_SLICE = 6,   /* this slice's index within the whole dispatch */
    JAL_SR_DISPATCH_NSLICES = 7, /* slices in the whole dispatch */
};

/* TDESC's imm: row stride in bytes (bits 31:4; 0 = packed rows) and dtype (bits 3:0). */
#define JAL_TDESC_IMM(stride, dtype) \
    ((int32_t)(((uint32_t)(stride) << 4) | ((uint32_t)(dtype)&0xfu)))
#define JAL_TDESC_STRIDE(imm) ((uint32_t)(imm) >> 4)
#define JAL_TDESC_DTYPE(imm) ((uint32_t)(imm)&0xfu)

/* VCVT's imm: rounding of conversions to MXFP4 (docs/tile-isa.md, "Conversions"). */
enum jal_cvt_mode {
    JAL_CVT_OCP = 0,  /* OCP MX v1.0: shared scale, round to nearest even, saturate */
    JAL_CVT_GGML = 1, /* ggml's quantize_row_mxfp4_ref: nearest, ties to the lower code */
};

/* Operand roles. "x" = scalar register, "t" = tile register, "q" = semaphore; x[r] is the
 * value of scalar register r. Unused fields must be zero. */
enum jal_opcode {
    /* scalar: a = rd, b = ra, c = rb; 64-bit two's complement, wrapping */
    JAL_OP_END = 0x00,   /* the slice's program is done */
    JAL_OP_LI = 0x01,    /* rd = sign-extended imm */
    JAL_OP_LUI = 0x02,   /* rd = (rd & 0xffffffff) | imm << 32 */
    JAL_OP_MOVSR = 0x03, /* rd = special register imm */
    JAL_OP_ADD = 0x08,
    JAL_OP_SUB = 0x09,
    JAL_OP_MUL = 0x0a,
    JAL_OP_DIVU = 0x0b,
    JAL_OP_REMU = 0x0c, /* unsigned; rb = 0 faults (INVALID_FIELD) */
    JAL_OP_AND = 0x0d,
    JAL_OP_OR = 0x0e,
    JAL_OP_XOR = 0x0f,
    JAL_OP_SHL = 0x10,
    JAL_OP_SHR = 0x11, /* shift count rb & 63; SHR is logical */
    JAL_OP_SLT = 0x12,
    JAL_OP_SLTU = 0x13, /* rd = ra < rb (signed / unsigned) */
    JAL_OP_MIN = 0x14,
    JAL_OP_MAX = 0x15,      /* signed */
    JAL_OP_ADDI = 0x18,     /* rd = ra + imm */
    JAL_OP_MULI = 0x19,     /* rd = ra * imm */
    JAL_OP_LD = 0x1a,       /* rd = 64-bit load from device address ra + imm (8-byte aligned) */
    JAL_OP_ST = 0x1b,       /* 64-bit store of rd to device address ra + imm (8-byte aligned) */
    JAL_OP_LW = 0x1c,       /* rd = zero-extended 32-bit load from ra + imm (4-byte aligned) */
    JAL_OP_PREFETCH = 0x1d, /* ISA 1.3: starts filling the scalar cache's line of address
	                     * ra + imm (ra in field b) and goes on; an LD/LW of the line waits
	                     * for the fill. Never faults: an unmapped address does nothing. */
    /* control: a = ra, b = rb, imm = target offset in instructions from this one */
    JAL_OP_BEQ = 0x20,
    JAL_OP_BNE = 0x21,
    JAL_OP_BLT = 0x22,
    JAL_OP_BGE = 0x23,
    JAL_OP_BLTU = 0x24,
    JAL_OP_JMP = 0x25, /* unconditional; a = b = 0 */
    JAL_OP_TRAP =
        0x26, /* fail the dispatch: status imm if it is a jal_status, else INVALID_FIELD */
    /* tiles and DMA */
    JAL_OP_TDESC =
        0x30, /* t(a) = {L1 address x[b], rows x[c], cols x[d], JAL_TDESC_IMM(stride, dtype)} */
    JAL_OP_TLOAD =
        0x31, /* t(a) <- device memory at x[b], row stride x[c] bytes; then q(imm) += 1 */
    JAL_OP_TSTORE =
        0x32, /* t(a) -> device memory at x[b], row stride x[c] bytes; then q(imm) += 1 */
    JAL_OP_TGATHER = 0x33, /* row i of t(a) <- row I[i] of the table at x[b] (x[c] bytes a row),
	                        * I = t(d) (I32, rows x 1); then q(imm) += 1 */
    JAL_OP_WAIT = 0x34,    /* wait until q(a) >= imm, then q(a) -= imm */
    JAL_OP_SIGNAL = 0x35,  /* q(a) += imm */
    JAL_OP_TREAD = 0x36,   /* x[a] = 32-bit element (row x[c], col imm) of t(b), zero-extended */
    JAL_OP_TWRITE =
        0x37, /* element (row x[c], col imm) of t(b) (F32 or I32) = low 32 bits of x[a] */
    /* matrix: t(a) (F32, M x N) += t(b) (M x K) x t(c)^T (t(c) holds N rows of K: weight
     * layout; with imm JAL_MMA_B_KMAJOR, ISA 1.4, K rows of N) */
    JAL_OP_MMA = 0x40,
    /* vector, all on F32 tiles unless noted: a = td, b = ta, c = tb; tb may be the same
	 * shape as the result, a row (1 x N, broadcast down), a column (M x 1, broadcast
	 * across) or 1 x 1 */
    JAL_OP_VADD = 0x50,
    JAL_OP_VSUB = 0x51,
    JAL_OP_VMUL = 0x52,
    JAL_OP_VMAX = 0x53,
    JAL_OP_VMIN = 0x54,
    JAL_OP_VFMA = 0x55,   /* td = fma(ta, tb, td) */
    JAL_OP_VSCALE = 0x56, /* td = ta * f32(imm) */
    JAL_OP_VADDS = 0x57,  /* td = ta + f32(imm) */
    JAL_OP_VEXP = 0x58,
    JAL_OP_VRSQRT = 0x59,
    JAL_OP_VSILU = 0x5a,
    JAL_OP_VSIGMOID = 0x5b,
    JAL_OP_VRECIP = 0x5c,
    JAL_OP_VNEG = 0x5d,
    JAL_OP_VCLAMP = 0x5e,  /* td = min(max(ta, f32(low word of x[c])), f32(low word of x[d])) */
    JAL_OP_VREDSUM = 0x60, /* td (M x 1) = row sums of ta, in column order */
    JAL_OP_VREDMAX = 0x61, /* td (M x 1) = row maxima of ta */
    JAL_OP_VARGMAX = 0x62, /* td (M x 1, I32) = index of each row's maximum (lowest on ties) */
    JAL_OP_VTOPK = 0x63,   /* td (M x imm, I32) = indices of each row's imm largest, descending,
	                        * lower index first on ties */
    JAL_OP_VCVT = 0x64,    /* td = ta converted to td's dtype (any formats; imm = jal_cvt_mode) */
    JAL_OP_VCOPY = 0x65,   /* td = ta (same dtype and shape) */
    JAL_OP_VFILL = 0x66,   /* every element of td (F32 or I32) = imm's bits (F32 imm or I32) */
    JAL_OP_VMASK = 0x67,   /* td[i][j] = -inf where key x[c]+j is not visible from query x[b]+i:
	                        * key > query, or imm > 0 and query - key >= imm (sliding window) */
    JAL_OP_VTOPKV = 0x68,  /* td (M x imm, F32) = the values VTOPK's indices select */
    JAL_OP_VIOTA = 0x69,   /* td (F32 or I32)[i][j] = x[b] + j * x[c] (F32: converted) */
    /* collective network: point-to-point, ordered per (sender, receiver) pair */
    JAL_OP_SEND = 0x70,    /* send t(a) to dispatch slice x[b]; q(imm) += 1 when it has left */
    JAL_OP_RECV = 0x71,    /* t(a) <- the next tile from dispatch slice x[b] (same shape and
	                        * dtype, else INVALID_FIELD); q(imm) += 1 when it has arrived */
    JAL_OP_BARRIER = 0x72, /* every slice of the dispatch (or of the current stage) reaches it */
    /* Stages (ISA 1.2): several kernels in one dispatch, one after another, each on its own
     * slices with its own arguments (docs/tile-isa.md, "Stages"). STAGE first settles the
     * slice's debt (below), waits until every engine op of the slice has completed and
     * clears q0..q15; then, if dispatch slice `index` is in x[a] (bit i: dispatch slice i),
     * the slice enters the stage: SR_SLICE and SR_NSLICES number the stage's slices, SR_ARGS
     * is the argument buffer + x[b], SEND and RECV name stage slices and BARRIER joins the
     * stage's slices. Otherwise the slice is back in the whole dispatch (SR_ARGS the argument
     * buffer itself) and branches to imm. Field c = 1 ("ordered"): the stage runs after the
     * one before it, so every slice of the dispatch (in the stage or not) now owes one
     * barrier of the whole dispatch, which it pays at its first ACQUIRE, or else at the next
     * STAGE or END. */
    JAL_OP_STAGE = 0x73,
    /* Where a kernel starts reading what earlier work wrote: what comes before it (argument
     * and weight loads) may run while the previous stage is still finishing. Pays the
     * slice's barrier debt (STAGE); without one (any dispatch of a single kernel) it does
     * nothing. */
    JAL_OP_ACQUIRE = 0x74,
    /* All-gathers in one instruction a slice (ISA 1.6). The group x[b]: 0, the slices of the
     * current stage (the dispatch's outside a stage) in rank order; JAL_PEER_DISPATCH, every
     * slice of the dispatch in dispatch order; with imm's JAL_GROUP_MASK (ISA 1.7), x[b] is a
     * mask of dispatch slices; anything else OUT_OF_RANGE. SENDALL is a SEND
     * of t(a) to each slice of the group in turn, itself included (the same messages, in the
     * same order on each pair); q(imm) += 1 once the last has left. RECVALL is a RECV from
     * each slice of the group in turn into t(a), side by side: each tile has t(a)'s rows and
     * dtype (4-byte elements) and lands at the columns after the one before it; their
     * columns must add up to t(a)'s (else INVALID_FIELD); q(imm) += 1 once the last has
     * arrived. */
    JAL_OP_SENDALL = 0x75,
    JAL_OP_RECVALL = 0x76,
};

/* Code object: a kernel as the device loads it. All fields little-endian. Layout: header,
 * code words (8-byte aligned), argument table, name; total_size covers all of it. */
#define JAL_CODE_MAGIC 0x314f4b4au /* 'JKO1' */
#define JAL_CODE_MAX_BYTES (1u << 20)

struct jal_code_object_header {
    uint32_t magic;
    uint16_t isa_major; /* JAL_ISA_VERSION_MAJOR the code targets */
    uint16_t isa_minor;
    uint32_t header_size;       /* sizeof(struct jal_code_object_header) */
    uint32_t total_size;        /* all of the object, <= JAL_CODE_MAX_BYTES */
    uint32_t code_offset;       /* from the start of the object, 8-byte aligned */
    uint32_t code_words;        /* instructions, >= 1 */
    uint32_t name_offset;       /* NUL-terminated kernel name, at most 63 characters */
    uint32_t args_size;         /* bytes of the argument buffer the kernel reads, multiple of 8 */
    uint32_t l1_bytes;          /* tile memory the kernel uses, <= JAL_SLICE_L1_BYTES */
    uint32_t flags;             /* must be zero */
    uint32_t code_crc32;        /* CRC-32 (IEEE) of the code words */
    uint32_t args_table_offset; /* struct jal_code_arg[args_table_count], 4-byte aligned */
    uint32_t args_table_count;  /* <= 64; may be 0 */
    uint32_t reserved[3];       /* must be zero */
};
JAL_ASSERT_SIZE(struct jal_code_object_header, 64);

/* One argument of the kernel: 8 bytes at offset in the argument buffer. */
enum jal_code_arg_kind {
    JAL_ARG_U64 = 1,     /* an integer (sizes, counts, positions) */
    JAL_ARG_ADDRESS = 2, /* a device address */
    JAL_ARG_F32 = 3,     /* a float in the low 32 bits */
};

struct jal_code_arg {
    char name[20];   /* NUL-terminated */
    uint32_t offset; /* multiple of 8, offset + 8 <= args_size */
    uint32_t kind;   /* enum jal_code_arg_kind */
};
JAL_ASSERT_SIZE(struct jal_code_arg, 28);

#endif
