/* PCI identity and BAR layout of the chip's I/O chiplet. */
#ifndef JAL_HW_PCI_H
#define JAL_HW_PCI_H

#include "compat.h"

#define JAL_PCI_VENDOR_ID 0x1e8f /* (chosen) placeholder until an assigned id exists */
#define JAL_PCI_DEVICE_ID 0x0a10
#define JAL_PCI_REVISION 0x01
#define JAL_PCI_CLASS 0x120000 /* processing accelerator */

/* BAR0: the register file (see regs.h). 64 KiB, 32-bit accesses only. */
#define JAL_BAR_REGS 0
#define JAL_BAR_REGS_SIZE 0x10000u
/* BAR2: user-queue doorbells, one 4 KiB page per queue so each can be mapped into the
 * process that owns the queue. A doorbell is a 64-bit write of the queue's write index. */
#define JAL_BAR_DOORBELL 2
#define JAL_DOORBELL_STRIDE 0x1000u
#define JAL_MAX_USER_QUEUES 256
#define JAL_BAR_DOORBELL_SIZE (JAL_DOORBELL_STRIDE * JAL_MAX_USER_QUEUES)
/* BAR4: MSI-X table and pending-bit array. */
#define JAL_BAR_MSIX 4
#define JAL_BAR_MSIX_SIZE 0x4000u
#define JAL_MSIX_VECTORS 16
#define JAL_MSIX_VECTOR_ADMIN 0       /* admin completions and device events */
#define JAL_MSIX_VECTOR_QUEUE_FIRST 1 /* user-queue signals use vectors 1..15 */

#endif
