/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * The ioctl ABI of jal.ko, the Jalapeño accelerator driver (/dev/jalN).
 *
 * Every argument struct starts with its size and flags and ends in reserved fields:
 *  - size: sizeof the struct as the caller knows it. Smaller than the first version of
 *    the struct is -EINVAL; larger is accepted if every byte past the driver's struct is
 *    zero (-E2BIG otherwise), so new fields can grow at the end.
 *  - flags: no flags are defined yet; any bit set is -EINVAL.
 *  - reserved: must be zero (-EINVAL); output structs come back with them zeroed.
 * "status" outputs carry the device's enum jal_status (include/jal/hw/status.h) when the
 * command reached the device; the ioctl then returns 0 even if the device refused.
 * Negative errno values are for requests the driver rejects itself (bad arguments
 * -EINVAL/-EFAULT/-E2BIG, -EPERM for another file's context or queue, -ENODEV once the
 * device is gone, -ETIMEDOUT when the firmware does not answer).
 *
 * Resources (contexts, queues, host buffers, interrupt bindings) belong to the open file
 * and are released when it is closed.
 */
#ifndef _UAPI_JAL_ACCEL_H
#define _UAPI_JAL_ACCEL_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define JAL_IOCTL_BASE 'J'

/* mmap offsets: the doorbell page of queue q (4 KiB, only for the file that created the
 * queue); host buffers at the offset HOST_ALLOC returns. */
#define JAL_MMAP_DOORBELL_BASE (1ull << 32)
#define JAL_MMAP_DOORBELL_OFFSET(q) (JAL_MMAP_DOORBELL_BASE + (__u64)(q)*4096)
#define JAL_MMAP_HOST_BASE (1ull << 40)

/* Registers of the chip as the driver sees them (BAR0), plus the function's layout. */
struct jal_ioctl_info {
	__u32 size;
	__u32 flags;
	__u32 id; /* JAL_REG_ID */
	__u32 if_version; /* JAL_REG_VERSION */
	__u32 cap;
	__u32 chip_index;
	__u32 fw_version;
	__u32 status; /* JAL_REG_STATUS bits */
	__u32 boot_status;
	__u32 post_code;
	__u32 fault;
	__u32 msix_vectors;
	__u64 bar_size[6];
	__u32 reset_generation; /* JAL_REG_RESET_GENERATION (0 before interface 1.5) */
	__u32 reserved[7];
};

/* IDENTIFY: the firmware's struct jal_identify (include/jal/hw/admin.h) into data_ptr;
 * data_len bytes of it (at most 4096). */
struct jal_ioctl_identify {
	__u32 size;
	__u32 flags;
	__u64 data_ptr;
	__u32 data_len;
	__u32 status; /* out */
	__u32 reserved[4];
};

/* A chip-wide reset: the driver requests it, waits for the firmware to come back and
 * enables its admin queue again. Every context and queue of every file is lost; doorbell
 * mappings are revoked. */
#define JAL_RESET_F_ADMIN_COMMAND \
	(1u << 0) /* request it with the admin RESET command
					     * instead of the RESET register */
struct jal_ioctl_reset {
	__u32 size;
	__u32 flags; /* JAL_RESET_F_* */
	__u32 state; /* out: JAL_REG_STATUS after the reset */
	__u32 reserved[5];
};

/* One admin command on the driver's queue. Commands that create or name contexts and
 * queues, or reset the chip, have their own ioctls and are refused here (-EPERM);
 * GET_PLACEMENT, EXPORT_MEMORY, IMPORT_PEER, QUEUE_STATUS and RESET_QUEUE must name the
 * file's own context/queue. */
struct jal_ioctl_admin {
	__u32 size;
	__u32 flags;
	__u32 opcode; /* enum jal_admin_opcode */
	__u32 data_len; /* bytes at data_ptr the device may fill, at most 1 MiB */
	__u64 data_ptr; /* user pointer, or 0 with data_len 0 */
	__u32 cdw[10];
	__u32 result; /* out: completion result */
	__u32 status; /* out: completion status */
	__u32 reserved[4];
};

struct jal_ioctl_context {
	__u32 size;
	__u32 flags;
	__u32 context; /* out for CREATE, in for DESTROY */
	__u32 leaked; /* out of DESTROY: allocations and queues it still held */
	__u32 status; /* out */
	__u32 reserved[3];
};

struct jal_ioctl_mem_alloc {
	__u32 size;
	__u32 flags;
	__u32 context;
	__u32 placement; /* enum jal_placement */
	__u64 bytes;
	__u64 slice_mask; /* logical slices */
	__u32 align_log2; /* 0: the device page */
	__u32 status; /* out */
	__u64 va; /* out */
	__u64 rounded_size; /* out */
	__u64 reply_slice_mask; /* out */
	__u32 reply_placement; /* out */
	__u32 page_size; /* out */
	__u32 pages; /* out */
	__u32 replicas; /* out */
	__u32 reserved[4];
};

struct jal_ioctl_mem_free {
	__u32 size;
	__u32 flags;
	__u32 context;
	__u32 status; /* out */
	__u64 va;
	__u32 reserved[4];
};

/* Host memory the device can reach: HOST_ALLOC gives DMA memory that is contiguous on the
 * device's bus (map it with mmap at mmap_offset); HOST_PIN pins a range of the caller's
 * memory and reports its DMA segments (one behind an IOMMU). Both are released with
 * HOST_FREE or on close; behind an IOMMU the device can no longer reach them then. Bus
 * addresses are IOVAs behind an IOMMU, guest- or host-physical addresses without one. */
struct jal_ioctl_host_alloc {
	__u32 size;
	__u32 flags;
	__u64 bytes; /* rounded up to pages; at most 4 MiB, 256 MiB behind an IOMMU */
	__u32 handle; /* out */
	__u32 reserved0;
	__u64 bus_addr; /* out: where the device sees it */
	__u64 mmap_offset; /* out */
	__u32 reserved[4];
};

struct jal_host_segment {
	__u64 bus_addr;
	__u64 len;
};

struct jal_ioctl_host_pin {
	__u32 size;
	__u32 flags;
	__u64 user_ptr; /* page aligned */
	__u64 bytes; /* page multiple, at most 1 GiB */
	__u64 segments_ptr; /* user array of struct jal_host_segment */
	__u32 max_segments;
	__u32 nsegments; /* out: DMA segments of the pinned range */
	__u32 handle; /* out */
	__u32 reserved[5];
};

struct jal_ioctl_host_free {
	__u32 size;
	__u32 flags;
	__u32 handle;
	__u32 reserved[5];
};

/* A user queue: the ring and read index must lie in this file's host memory. The queue's
 * doorbell page is mapped with mmap at doorbell_offset. */
struct jal_ioctl_queue_create {
	__u32 size;
	__u32 flags;
	__u32 context;
	__u32 ring_size; /* packets, a power of two */
	__u64 ring_bus;
	__u64 read_index_bus;
	__u32 vector; /* MSI-X vector 1..15 */
	__u32 queue; /* out */
	__u32 status; /* out */
	__u32 reserved0;
	__u64 doorbell_offset; /* out */
	__u32 reserved[4];
};

struct jal_ioctl_queue_destroy {
	__u32 size;
	__u32 flags;
	__u32 queue;
	__u32 status; /* out */
	__u32 reserved[4];
};

/* Signal `eventfd` each time MSI-X vector `vector` (1..15) fires; -1 unbinds. */
struct jal_ioctl_bind_irq {
	__u32 size;
	__u32 flags;
	__u32 vector;
	__s32 eventfd;
	__u32 reserved[4];
};

/* Sleeps until the struct jal_signal at signal_ptr (in the caller's memory) satisfies
 * `value <condition> compare`, woken by interrupts on `vector`. */
enum jal_wait_condition {
	JAL_WAIT_EQ = 0,
	JAL_WAIT_NE = 1,
	JAL_WAIT_LT = 2,
	JAL_WAIT_GTE = 3,
};

struct jal_ioctl_wait_signal {
	__u32 size;
	__u32 flags;
	__u64 signal_ptr; /* 16-byte aligned struct jal_signal */
	__s64 compare;
	__u64 timeout_ns;
	__u32 vector; /* 1..15 */
	__u32 condition; /* enum jal_wait_condition */
	__s64 value; /* out: the value that satisfied it */
	__u32 signal_status; /* out: the signal's status word */
	__u32 reserved[3];
};

#define JAL_IOCTL_INFO _IOWR(JAL_IOCTL_BASE, 0x00, struct jal_ioctl_info)
#define JAL_IOCTL_ADMIN _IOWR(JAL_IOCTL_BASE, 0x01, struct jal_ioctl_admin)
#define JAL_IOCTL_RESET _IOWR(JAL_IOCTL_BASE, 0x02, struct jal_ioctl_reset)
#define JAL_IOCTL_IDENTIFY \
	_IOWR(JAL_IOCTL_BASE, 0x03, struct jal_ioctl_identify)
#define JAL_IOCTL_CTX_CREATE \
	_IOWR(JAL_IOCTL_BASE, 0x10, struct jal_ioctl_context)
#define JAL_IOCTL_CTX_DESTROY \
	_IOWR(JAL_IOCTL_BASE, 0x11, struct jal_ioctl_context)
#define JAL_IOCTL_MEM_ALLOC \
	_IOWR(JAL_IOCTL_BASE, 0x12, struct jal_ioctl_mem_alloc)
#define JAL_IOCTL_MEM_FREE \
	_IOWR(JAL_IOCTL_BASE, 0x13, struct jal_ioctl_mem_free)
#define JAL_IOCTL_QUEUE_CREATE \
	_IOWR(JAL_IOCTL_BASE, 0x15, struct jal_ioctl_queue_create)
#define JAL_IOCTL_QUEUE_DESTROY \
	_IOWR(JAL_IOCTL_BASE, 0x16, struct jal_ioctl_queue_destroy)
#define JAL_IOCTL_HOST_ALLOC \
	_IOWR(JAL_IOCTL_BASE, 0x20, struct jal_ioctl_host_alloc)
#define JAL_IOCTL_HOST_PIN \
	_IOWR(JAL_IOCTL_BASE, 0x21, struct jal_ioctl_host_pin)
#define JAL_IOCTL_HOST_FREE \
	_IOWR(JAL_IOCTL_BASE, 0x22, struct jal_ioctl_host_free)
#define JAL_IOCTL_BIND_IRQ \
	_IOWR(JAL_IOCTL_BASE, 0x30, struct jal_ioctl_bind_irq)
#define JAL_IOCTL_WAIT_SIGNAL \
	_IOWR(JAL_IOCTL_BASE, 0x31, struct jal_ioctl_wait_signal)

#endif /* _UAPI_JAL_ACCEL_H */
