/* User-mode queues: the data plane, executed by the chip's command processor (not by
 * firmware). HSA-AQL style:
 *
 *  - A queue is a ring of 64-byte packets in host memory (size a power of two) plus two
 *    64-bit indices that only grow: the write index (host-owned, in host memory, and
 *    published to the device through the queue's doorbell) and the read index (written by
 *    the device into host memory as packets retire).
 *  - A producer reserves slots by atomically incrementing the write index, waits while
 *    write - read > size, writes the packet body, then publishes the header word last with
 *    release semantics, then writes the new write index to the doorbell.
 *  - The command processor executes a queue's packets in order, one at a time; queues run
 *    in parallel. After a packet retires its header is reset to JAL_PACKET_INVALID, so an
 *    empty slot always reads as INVALID.
 *  - A packet completes by writing its completion signal (if any): the status, then the
 *    value decremented by one (release). A failing packet still completes its signal, with
 *    a non-zero status; the queue records the error and goes on with the next packet.
 *  - (1.9) A packet with JAL_PACKET_F_CHAIN runs only if the packet before it in the queue
 *    completed OK; otherwise it is not executed and completes with that packet's status, so
 *    a failure travels down a chain of packets to the chain's last completion signal.
 */
#ifndef JAL_HW_QUEUE_H
#define JAL_HW_QUEUE_H

#include "compat.h"

#define JAL_PACKET_SIZE 64
#define JAL_QUEUE_SIZE_MIN 16u /* packets */
#define JAL_QUEUE_SIZE_MAX 65536u

enum jal_packet_type {
    JAL_PACKET_INVALID = 0, /* empty slot: not yet published, or already retired */
    JAL_PACKET_NOP = 1,
    JAL_PACKET_COPY = 2,
    JAL_PACKET_BARRIER_AND = 3,
    JAL_PACKET_SIGNAL = 4,
    JAL_PACKET_DISPATCH = 5,    /* kernel dispatch (tile ISA) */
    JAL_PACKET_COLLECTIVE = 6,  /* reserved (UNSUPPORTED): collectives are built from the below */
    JAL_PACKET_WRITE_VALUE = 7, /* (1.9) store a 64-bit value at a device address */
    JAL_PACKET_WAIT_VALUE = 8,  /* (1.9) wait until a 64-bit device word compares true */
};

/* jal_packet_*.flags */
#define JAL_PACKET_F_INTERRUPT (1u << 0) /* raise the queue's MSI-X vector at completion */
#define JAL_PACKET_F_CHAIN (1u << 1)     /* (1.9) run only if the previous packet completed OK */

/* Every packet begins with this word; the producer stores it last (32-bit, release). */
struct jal_packet_header {
    uint8_t type;  /* enum jal_packet_type */
    uint8_t flags; /* JAL_PACKET_F_* */
    uint16_t arg;  /* type-specific (copy direction, barrier count, signal op) */
};
JAL_ASSERT_SIZE(struct jal_packet_header, 4);

/* The completion signal of every packet is its last 8 bytes: a host bus address of a
 * struct jal_signal, or 0 for none. */
#define JAL_PACKET_SIGNAL_OFFSET 56

struct jal_packet_nop {
    struct jal_packet_header header;
    uint32_t reserved0;
    uint64_t reserved[6];
    uint64_t completion_signal;
};
JAL_ASSERT_SIZE(struct jal_packet_nop, 64);
JAL_ASSERT_OFFSET(struct jal_packet_nop, completion_signal, JAL_PACKET_SIGNAL_OFFSET);

enum jal_copy_dir {
    JAL_COPY_H2D = 1, /* src: host bus address; dst: device virtual address */
    JAL_COPY_D2H = 2, /* src: device virtual address; dst: host bus address */
    JAL_COPY_D2D = 3, /* both device virtual addresses */
};

struct jal_packet_copy {
    struct jal_packet_header header; /* arg: enum jal_copy_dir */
    uint32_t reserved0;
    uint64_t src;
    uint64_t dst;
    uint64_t size; /* bytes, at most JAL_COPY_SIZE_MAX */
    uint64_t reserved[3];
    uint64_t completion_signal;
};
JAL_ASSERT_SIZE(struct jal_packet_copy, 64);
JAL_ASSERT_OFFSET(struct jal_packet_copy, src, 8);
JAL_ASSERT_OFFSET(struct jal_packet_copy, completion_signal, JAL_PACKET_SIGNAL_OFFSET);

#define JAL_COPY_SIZE_MAX (1ull << 40)

/* Waits until every listed signal's value is 0 (arg = count, 1..5). A dependency that
 * completed with an error fails the barrier with that status. */
#define JAL_BARRIER_DEPS_MAX 5
struct jal_packet_barrier_and {
    struct jal_packet_header header; /* arg: number of dep_signal entries used */
    uint32_t reserved0;
    uint64_t dep_signal[JAL_BARRIER_DEPS_MAX];
    uint64_t reserved1;
    uint64_t completion_signal;
};
JAL_ASSERT_SIZE(struct jal_packet_barrier_and, 64);
JAL_ASSERT_OFFSET(struct jal_packet_barrier_and, dep_signal, 8);

enum jal_signal_op {
    JAL_SIGNAL_SET = 1, /* value = operand */
    JAL_SIGNAL_ADD = 2, /* value += operand */
    JAL_SIGNAL_SUB = 3, /* value -= operand */
};

/* Writes one signal (arg = enum jal_signal_op), then completes its own completion signal. */
struct jal_packet_signal {
    struct jal_packet_header header;
    uint32_t reserved0;
    uint64_t signal; /* host bus address of the target struct jal_signal */
    int64_t operand;
    uint64_t reserved[4];
    uint64_t completion_signal;
};
JAL_ASSERT_SIZE(struct jal_packet_signal, 64);

/* (1.9) Device-memory words as semaphores between queues and between chips (like CUDA's
 * stream memory operations): WRITE_VALUE stores `value` at the device virtual address
 * `addr` of the queue's context (8-byte aligned; a peer chip's page is written over the
 * fabric, LINK_DOWN if it cannot be reached), after everything the queue did before it is
 * visible. WAIT_VALUE holds the queue until the word at `addr` compares true against
 * `value` (header arg: enum jal_value_op, unsigned compare), re-reading it at least every
 * 100 us; after `timeout_us` (0: no limit) of wall-clock time it completes with TIMEOUT.
 * Chips exchange data by writing a peer's memory and then a flag word there; the peer's
 * queue waits on the flag (docs/multichip.md, "Collectives"). */
enum jal_value_op {
    JAL_VALUE_GE = 1, /* *addr >= value */
    JAL_VALUE_EQ = 2, /* *addr == value */
    JAL_VALUE_NE = 3, /* *addr != value */
};

struct jal_packet_value {
    struct jal_packet_header header; /* WAIT_VALUE: arg = enum jal_value_op; WRITE_VALUE: 0 */
    uint32_t timeout_us;             /* WAIT_VALUE: 0 = no limit; WRITE_VALUE: must be 0 */
    uint64_t addr;                   /* device virtual address, 8-byte aligned */
    uint64_t value;
    uint64_t reserved[4];
    uint64_t completion_signal;
};
JAL_ASSERT_SIZE(struct jal_packet_value, 64);
JAL_ASSERT_OFFSET(struct jal_packet_value, addr, 8);

/* Runs a kernel (a code object in device memory, isa.h) on a set of slices. Each slice
 * of the mask runs one instance of the program; JAL_SR_SLICE numbers them 0..n-1 in
 * ascending logical order. The packet completes when every instance has ended; a fault in
 * any instance (bad address, out-of-bounds tile, divide by zero, budget exhausted,
 * deadlock) fails it with that status and stops the others. A code object that fails
 * validation fails the packet before any slice runs. (Interface 1.2: docs/tile-isa.md.) */
#define JAL_DISPATCH_F_TIMING_ONLY (1u << 0) /* header.arg: run for time only, no data */

struct jal_packet_dispatch {
    struct jal_packet_header header; /* arg: JAL_DISPATCH_F_*, other bits zero */
    uint32_t budget_kinsn;           /* per-slice instruction budget in thousands; 0: default */
    uint64_t code_object;            /* device address of a struct jal_code_object_header */
    uint64_t slice_mask;             /* logical slices, each usable (jalctl slices) */
    uint64_t args;                   /* device address of the argument buffer (JAL_SR_ARGS) */
    uint64_t report;                 /* 0, or host bus address of a struct jal_dispatch_report */
    uint64_t times;                  /* (1.6) 0, or host bus address of a jal_dispatch_times */
    uint64_t reserved;
    uint64_t completion_signal;
};
JAL_ASSERT_SIZE(struct jal_packet_dispatch, 64);
JAL_ASSERT_OFFSET(struct jal_packet_dispatch, times, 40);

/* When a dispatch ran on the device's modelled clock (interface 1.6), written before its
 * report and completion signal if the packet names one. The clock: the data plane's modelled
 * time in nanoseconds, free-running (resets do not restart it), kept per physical slice. A dispatch
 * starts when the last of its slices is free and ends modelled_ns later, when its slices
 * become free again (the modelled-time process of jal-emu --trace is the same clock).
 * Packets other than DISPATCH take no modelled time. */
struct jal_dispatch_times {
    uint64_t start_ns;
    uint64_t end_ns;
    uint32_t status; /* enum jal_status of the dispatch, as in its report */
    uint32_t slices; /* slices it ran on (0 if it failed before any ran) */
    uint64_t done;   /* 1, stored last with release: the host clears it before submitting */
};
JAL_ASSERT_SIZE(struct jal_dispatch_times, 32);

/* What a dispatch did, written before its completion signal (if the packet names one). */
#define JAL_DISPATCH_DEFAULT_BUDGET_KINSN (256u * 1024u) /* 268 M instructions a slice */

struct jal_dispatch_report {
    uint32_t status;      /* enum jal_status of the dispatch */
    uint32_t fault_slice; /* dispatch slice index of the first fault, or ~0 */
    uint32_t fault_pc;    /* its instruction index */
    uint32_t fault_opcode;
    uint64_t fault_address; /* device address or L1 offset involved, if any */
    uint64_t modelled_ns;   /* modelled time from start to the last slice's end */
    uint64_t instructions;  /* executed, all slices */
    uint64_t flops;         /* matrix and vector floating-point operations */
    uint64_t hbm_bytes;     /* bytes moved between HBM and L1 (local and remote) */
    uint64_t energy_nj;     /* modelled dynamic energy */
};
JAL_ASSERT_SIZE(struct jal_dispatch_report, 64);
JAL_ASSERT_OFFSET(struct jal_packet_dispatch, code_object, 8);

/* A 64-bit memory signal in host memory, 16-byte aligned. The device writes status first
 * and value last; waiters read value, then (acquire) status. */
struct jal_signal {
    uint32_t status; /* enum jal_status of the last packet that completed it */
    uint32_t reserved;
    int64_t value;
};
JAL_ASSERT_SIZE(struct jal_signal, 16);
JAL_ASSERT_OFFSET(struct jal_signal, value, 8);

/* Per-queue doorbell page in BAR2 (JAL_DOORBELL_STRIDE apart, by queue id). The host
 * writes the write index to offset 0 (64-bit). The device sets NEED_WAKEUP to 1 before its
 * queue engine sleeps; a host that sees it set after ringing must also kick the engine
 * (with the kernel driver or QEMU this is implicit in the MMIO write; in direct mode it is
 * the function's doorbell eventfd). */
#define JAL_DOORBELL_WRITE_INDEX 0x0
#define JAL_DOORBELL_NEED_WAKEUP 0x8

/* Queue state, reported by JAL_ADMIN_QUEUE_STATUS. */
enum jal_queue_state {
    JAL_QUEUE_ACTIVE = 1,
    JAL_QUEUE_ERROR = 2, /* stopped: the ring itself is unreadable (reset to go on) */
    JAL_QUEUE_DISABLED = 3,
};

#endif
