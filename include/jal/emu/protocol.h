/* The jal-emu transport protocol: how a host-side client (userlib's direct backend, or
 * the QEMU device model) attaches to one emulated chip.
 *
 * One SOCK_SEQPACKET Unix socket per connection, one message per packet, file
 * descriptors passed with SCM_RIGHTS. Each connection is one host function of the chip:
 * it has its own admin queue registers, interrupt vectors and bus address space (like an
 * SR-IOV function behind its own IOMMU domain). Requests carry an id; every request except
 * a posted REG_WRITE gets exactly one REPLY with that id, in order. A malformed message
 * gets a REPLY with JAL_STATUS_PROTOCOL and the connection stays usable.
 *
 * Host memory: the client shares memory with MEM_MAP (a memfd and a bus address range);
 * the device DMAs by bus address into it. Interrupts: SET_IRQ binds an MSI-X vector to an
 * eventfd the emulator signals. */
#ifndef JAL_EMU_PROTOCOL_H
#define JAL_EMU_PROTOCOL_H

#include "../hw/compat.h"

#define JAL_PROTO_VERSION_MAJOR 1
#define JAL_PROTO_VERSION_MINOR 2 /* 1.2: CLIENT_INFO */
#define JAL_PROTO_VERSION ((JAL_PROTO_VERSION_MAJOR << 16) | JAL_PROTO_VERSION_MINOR)
#define JAL_PROTO_MSG_MAX 256 /* no message is larger */

enum jal_msg_type {
    JAL_MSG_HELLO = 1,         /* jal_msg_hello -> REPLY + jal_msg_hello_reply payload */
    JAL_MSG_REG_READ = 2,      /* jal_msg_reg -> REPLY, value = register */
    JAL_MSG_REG_WRITE = 3,     /* jal_msg_reg; posted unless JAL_MSG_F_ACK */
    JAL_MSG_MEM_MAP = 4,       /* jal_msg_mem_map + memfd -> REPLY */
    JAL_MSG_MEM_UNMAP = 5,     /* jal_msg_mem_map (fd_offset ignored) -> REPLY */
    JAL_MSG_SET_IRQ = 6,       /* jal_msg_set_irq + eventfd (none: unbind) -> REPLY */
    JAL_MSG_GET_DOORBELLS = 7, /* jal_msg_hdr -> REPLY + two fds: the function's BAR2 as a
				    * memfd (JAL_BAR_DOORBELL_SIZE, map shared) and the eventfd that
				    * wakes a sleeping queue engine (see queue.h, NEED_WAKEUP) */
    JAL_MSG_CLIENT_INFO = 8,   /* (1.2) jal_msg_client_info -> REPLY + jal_msg_client_info_reply:
                                * who is attached as another function of the chip (jalctl
                                * reset lists them before it takes their state away) */
    JAL_MSG_REPLY = 0x80,      /* jal_msg_reply [+ payload] */
};

#define JAL_MSG_F_ACK (1u << 0) /* REG_WRITE: reply once the write took effect */

struct jal_msg_hdr {
    uint16_t type;  /* enum jal_msg_type */
    uint16_t flags; /* JAL_MSG_F_* */
    uint32_t size;  /* bytes of the whole message, header included */
    uint64_t id;    /* chosen by the requester, echoed in the reply */
};
JAL_ASSERT_SIZE(struct jal_msg_hdr, 16);

struct jal_msg_hello {
    struct jal_msg_hdr hdr;
    uint32_t proto_version; /* JAL_PROTO_VERSION of the client */
    uint32_t flags;         /* must be zero */
    char client[32];        /* NUL-terminated name, for the emulator's log */
};
JAL_ASSERT_SIZE(struct jal_msg_hello, 56);

struct jal_msg_reg {
    struct jal_msg_hdr hdr;
    uint32_t bar;    /* JAL_BAR_* */
    uint32_t offset; /* byte offset in the BAR, aligned to width */
    uint32_t width;  /* 4 or 8 bytes */
    uint32_t reserved;
    uint64_t value; /* REG_WRITE: the value */
};
JAL_ASSERT_SIZE(struct jal_msg_reg, 40);

struct jal_msg_mem_map {
    struct jal_msg_hdr hdr;
    uint64_t bus_addr;  /* where the device sees the region; page aligned */
    uint64_t size;      /* page multiple */
    uint64_t fd_offset; /* offset of the region in the passed fd; page aligned */
    uint32_t flags;     /* must be zero */
    uint32_t reserved;
};
JAL_ASSERT_SIZE(struct jal_msg_mem_map, 48);

struct jal_msg_set_irq {
    struct jal_msg_hdr hdr;
    uint32_t vector; /* 0 .. JAL_MSIX_VECTORS-1 */
    uint32_t flags;  /* must be zero */
};
JAL_ASSERT_SIZE(struct jal_msg_set_irq, 24);

struct jal_msg_reply {
    struct jal_msg_hdr hdr;
    uint32_t status; /* enum jal_status */
    uint32_t reserved;
    uint64_t value; /* REG_READ: the register value */
};
JAL_ASSERT_SIZE(struct jal_msg_reply, 32);

/* Payload after jal_msg_reply for HELLO. */
struct jal_msg_hello_reply {
    uint32_t proto_version; /* the emulator's JAL_PROTO_VERSION */
    uint32_t function;      /* host function this connection is, 0..JAL_MGMT_MAX_FUNCS-1 */
    uint32_t chip_index;
    uint32_t msix_vectors;
    uint64_t bar_size[6]; /* 0 for absent BARs */
};
JAL_ASSERT_SIZE(struct jal_msg_hello_reply, 64);

struct jal_msg_client_info {
    struct jal_msg_hdr hdr;
    uint32_t function; /* 0..JAL_MGMT_MAX_FUNCS-1; larger: OUT_OF_RANGE */
    uint32_t flags;    /* must be zero */
};
JAL_ASSERT_SIZE(struct jal_msg_client_info, 24);

/* Payload after jal_msg_reply for CLIENT_INFO. */
struct jal_msg_client_info_reply {
    uint32_t present;  /* 1 if a client is attached as that function */
    uint32_t pid;      /* its process id as the emulator's socket saw it (SO_PEERCRED), 0 unknown */
    uint32_t contexts; /* contexts it holds (JAL_FN_CONTEXTS, as the firmware published it) */
    uint32_t reserved;
    char client[32]; /* the name from its HELLO, NUL-terminated, printable */
};
JAL_ASSERT_SIZE(struct jal_msg_client_info_reply, 48);

#endif
