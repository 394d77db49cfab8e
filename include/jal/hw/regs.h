/* BAR0 register file. All registers are 32 bits wide and naturally aligned; 64-bit
 * quantities are LO/HI pairs written LO first. Reads of unassigned offsets return 0 and
 * writes to them are ignored (and logged by the emulator). */
#ifndef JAL_HW_REGS_H
#define JAL_HW_REGS_H

#include "compat.h"

/* Identification (read-only). */
#define JAL_REG_ID 0x0000         /* JAL_ID_MAGIC */
#define JAL_REG_VERSION 0x0004    /* interface version implemented by firmware, JAL_HW_VERSION */
#define JAL_REG_CAP 0x0008        /* JAL_CAP_* bits */
#define JAL_REG_CHIP_INDEX 0x000c /* position of the chip in its host tray, 0..7 */
#define JAL_REG_FW_VERSION 0x0010 /* running firmware: major << 16 | minor << 8 | patch */

/* Boot and health (read-only, written by firmware). */
#define JAL_REG_STATUS 0x0020      /* JAL_STATUS_* bits below */
#define JAL_REG_BOOT_STATUS 0x0024 /* step << 16 | jal_status of that step (last finished step) */
#define JAL_REG_POST_CODE 0x0028   /* last POST code written by the boot table */
#define JAL_REG_FAULT 0x002c       /* jal_status of the fault that set JAL_REG_STATUS_FAILED */

#define JAL_ID_MAGIC 0x4a414c50u /* 'JALP' */

#define JAL_CAP_ADMIN_QUEUE (1u << 0)
#define JAL_CAP_USER_QUEUES (1u << 1)
#define JAL_CAP_MSIX (1u << 2)

#define JAL_REG_STATUS_BOOTING (1u << 0)  /* firmware is running its boot table */
#define JAL_REG_STATUS_READY (1u << 1)    /* boot finished, admin queue may be enabled */
#define JAL_REG_STATUS_FAILED (1u << 2)   /* a fatal boot step or fatal error; see FAULT */
#define JAL_REG_STATUS_DEGRADED (1u << 3) /* ready, with harvested slices or failed channels */
#define JAL_REG_STATUS_RESETTING (1u << 4)

/* Chip reset: write JAL_RESET_MAGIC to request a full chip reset (firmware reboots,
 * all queues and contexts are lost, STATUS goes to BOOTING then READY or FAILED). */
#define JAL_REG_RESET 0x0030
#define JAL_RESET_MAGIC 0x52534554u /* 'RSET' */

/* (since 1.5) Reset generation (read-only, kept by the host interface, not by firmware):
 * 0 at power-on, +1 the moment a chip reset or a watchdog reset of the management core
 * takes effect. Contexts, queues, memory and admin queues set up while it held another
 * value are gone; a host compares it with the value it read when it set them up. Every
 * function's bound MSI-X vectors fire once at that moment, so sleeping waiters look. */
#define JAL_REG_RESET_GENERATION 0x0034

/* Admin queue pair (NVMe-style; see admin.h). Program the bases and sizes with
 * ADMIN_CTRL.ENABLE clear, then set ENABLE and poll ADMIN_STATUS for READY or ERROR.
 * Bases are host bus addresses, 64-byte aligned for the SQ and 16-byte for the CQ. */
#define JAL_REG_ADMIN_SQ_BASE_LO 0x0100
#define JAL_REG_ADMIN_SQ_BASE_HI 0x0104
#define JAL_REG_ADMIN_CQ_BASE_LO 0x0108
#define JAL_REG_ADMIN_CQ_BASE_HI 0x010c
#define JAL_REG_ADMIN_QSIZE 0x0110  /* SQ entries [15:0], CQ entries [31:16]; 2..4096 */
#define JAL_REG_ADMIN_CTRL 0x0114   /* JAL_ADMIN_CTRL_* */
#define JAL_REG_ADMIN_STATUS 0x0118 /* JAL_ADMIN_STATUS_* [7:0], jal_status of ERROR [31:16] */
/* RO, chip-wide (since 1.10): a count the firmware moves on as it works on admin commands,
 * any function's: at each command it takes, and every few milliseconds of a long one (a map
 * or free of most of HBM). A host times a command out only after this long without it
 * moving, so a long command on a slow host is not mistaken for a wedged firmware. */
#define JAL_REG_ADMIN_PROGRESS 0x011c
#define JAL_REG_ADMIN_SQ_TAIL 0x0120 /* doorbell: index of the next free SQ slot */
#define JAL_REG_ADMIN_CQ_HEAD 0x0124 /* doorbell: index of the next CQ entry the host reads */

#define JAL_ADMIN_CTRL_ENABLE (1u << 0)
#define JAL_ADMIN_STATUS_READY (1u << 0)
#define JAL_ADMIN_STATUS_ERROR (1u << 1)
#define JAL_ADMIN_QSIZE_MIN 2u
#define JAL_ADMIN_QSIZE_MAX 4096u

/* Interrupts: bit i of INTR_MASK masks MSI-X vector i. */
#define JAL_REG_INTR_MASK 0x0200

/* Scratch registers for host software; no device meaning. */
#define JAL_REG_SCRATCH0 0x0300
#define JAL_REG_SCRATCH_COUNT 4

#endif
