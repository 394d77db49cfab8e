/* Admin queue: the management plane, served by the I/O chiplet's firmware.
 *
 * NVMe-style: the host writes 64-byte submission entries into a ring in host memory and
 * writes the new tail to JAL_REG_ADMIN_SQ_TAIL. Firmware fetches entries by DMA, executes
 * them in order and writes 16-byte completions into the completion ring. A completion is
 * valid when its phase bit equals the host's expected phase; the phase flips each time the
 * ring wraps. The host reads flags, then (after a read barrier) the rest of the entry, and
 * reports consumed entries through JAL_REG_ADMIN_CQ_HEAD. Completions raise MSI-X vector
 * JAL_MSIX_VECTOR_ADMIN unless masked.
 *
 * Data-carrying commands name one host buffer (data_addr, data_len). Commands whose reply
 * is variable length fill as much as fits and report the byte count in result. */
#ifndef JAL_HW_ADMIN_H
#define JAL_HW_ADMIN_H

#include "chip.h"
#include "compat.h"

enum jal_admin_opcode {
    JAL_ADMIN_IDENTIFY = 0x01,        /* data: struct jal_identify */
    JAL_ADMIN_GET_FEATURE = 0x02,     /* cdw[0] feature; result: value */
    JAL_ADMIN_SET_FEATURE = 0x03,     /* cdw[0] feature, cdw[1] value; result: value in force */
    JAL_ADMIN_GET_TELEMETRY = 0x04,   /* data: struct jal_telemetry */
    JAL_ADMIN_GET_LOG = 0x05,         /* cdw[0] log id, cdw[1] first seq; data: page + entries */
    JAL_ADMIN_GET_SLICE_MAP = 0x06,   /* data: struct jal_slice_map */
    JAL_ADMIN_GET_HBM_REPORT = 0x07,  /* cdw[0] first channel, cdw[1] count; data: report */
    JAL_ADMIN_RESET = 0x08,           /* cdw[0] jal_reset_kind; completes, then resets */
    JAL_ADMIN_GET_LINK_REPORT = 0x09, /* cdw[0] first port, cdw[1] count; data: report (1.8) */
    /* Contexts, device memory and user queues (interface 1.1). Each belongs to the host
	 * function that created it and is destroyed when that function detaches. */
    JAL_ADMIN_CREATE_CONTEXT = 0x10, /* cdw[0] host space (since 1.11; 0: none, the function's
                                       * whole bus address space); result: context id */
    JAL_ADMIN_DESTROY_CONTEXT =
        0x11,                       /* cdw[0] context; result: allocations + queues it still held */
    JAL_ADMIN_ALLOC_MEMORY = 0x12,  /* cdw[0] context, cdw[1..2] bytes, cdw[3] jal_placement,
					  * cdw[4..5] logical slice mask, cdw[6] log2 alignment (0: page);
					  * data: struct jal_mem_alloc_reply */
    JAL_ADMIN_FREE_MEMORY = 0x13,   /* cdw[0] context, cdw[1..2] device virtual address */
    JAL_ADMIN_GET_PLACEMENT = 0x14, /* cdw[0] context, cdw[1..2] address, cdw[3] first page;
					  * data: jal_placement_header + jal_page_placement entries */
    JAL_ADMIN_CREATE_QUEUE = 0x15,  /* cdw[0] context, cdw[1..2] ring bus address, cdw[3] size in
					  * packets, cdw[4..5] read-index bus address, cdw[6] MSI-X vector;
					  * result: queue id (its doorbell page in BAR2) */
    JAL_ADMIN_DESTROY_QUEUE = 0x16, /* cdw[0] queue id */
    JAL_ADMIN_QUEUE_STATUS = 0x17,  /* cdw[0] queue id; data: struct jal_queue_status */
    JAL_ADMIN_RESET_QUEUE = 0x18,   /* cdw[0] queue id: drop unexecuted packets, clear the error */
    JAL_ADMIN_GET_USAGE = 0x19,     /* data: struct jal_usage (interface 1.6): who holds what */
    /* Peer memory (interface 1.8; docs/fabric.md, "Peer memory"). */
    JAL_ADMIN_EXPORT_MEMORY = 0x1a, /* cdw[0] context, cdw[1..2] address (page-aligned, inside one
				      * allocation), cdw[3..4] bytes (whole pages);
				      * data: struct jal_mem_export_reply; result: handle */
    JAL_ADMIN_IMPORT_PEER = 0x1b,   /* cdw[0] context, cdw[1] peer chip, cdw[2] handle, cdw[3..4]
				      * key, cdw[5] pages; data: struct jal_mem_alloc_reply (placement
				      * JAL_PLACE_PEER); FREE_MEMORY of its address unmaps it */
    /* Host windows (interface 1.11; docs/device-interface.md 5.10): a context created with a
     * host space reaches host memory only inside that space's windows. */
    JAL_ADMIN_HOST_WINDOW = 0x1c, /* cdw[0] jal_window_op, cdw[1] host space (not 0),
                                    * cdw[2..3] bus address, cdw[4..5] bytes (ADD, REMOVE) */
    /* Firmware update (interface 1.6; fw_image.h, docs/firmware.md 10). Privileged. */
    JAL_ADMIN_FW_DOWNLOAD = 0x20, /* cdw[0] offset in the inactive slot (0 erases it); data: the
				    * image's bytes from there, sequential chunks */
    JAL_ADMIN_FW_ACTIVATE = 0x21, /* verify the downloaded image; completes, then resets into it
				    * on trial. IMAGE_REJECTED: result = jal_fw_image_error */
    JAL_ADMIN_FW_STATUS = 0x22,   /* data: struct jal_fw_status */
    JAL_ADMIN_DEBUG_FAULT = 0x7f, /* cdw[0] jal_debug_fault, cdw[1..] arguments */
};

/* The opcode's name ("IDENTIFY", ...), or NULL for one this header does not define: one
 * table for the host library's messages and the emulator's traces. */
static inline const char* jal_admin_opcode_name(uint8_t opcode)
{
    switch (opcode) {
    case JAL_ADMIN_IDENTIFY:
        return "IDENTIFY";
    case JAL_ADMIN_GET_FEATURE:
        return "GET_FEATURE";
    case JAL_ADMIN_SET_FEATURE:
        return "SET_FEATURE";
    case JAL_ADMIN_GET_TELEMETRY:
        return "GET_TELEMETRY";
    case JAL_ADMIN_GET_LOG:
        return "GET_LOG";
    case JAL_ADMIN_GET_SLICE_MAP:
        return "GET_SLICE_MAP";
    case JAL_ADMIN_GET_HBM_REPORT:
        return "GET_HBM_REPORT";
    case JAL_ADMIN_GET_LINK_REPORT:
        return "GET_LINK_REPORT";
    case JAL_ADMIN_RESET:
        return "RESET";
    case JAL_ADMIN_CREATE_CONTEXT:
        return "CREATE_CONTEXT";
    case JAL_ADMIN_DESTROY_CONTEXT:
        return "DESTROY_CONTEXT";
    case JAL_ADMIN_ALLOC_MEMORY:
        return "ALLOC_MEMORY";
    case JAL_ADMIN_FREE_MEMORY:
        return "FREE_MEMORY";
    case JAL_ADMIN_GET_PLACEMENT:
        return "GET_PLACEMENT";
    case JAL_ADMIN_EXPORT_MEMORY:
        return "EXPORT_MEMORY";
    case JAL_ADMIN_IMPORT_PEER:
        return "IMPORT_PEER";
    case JAL_ADMIN_HOST_WINDOW:
        return "HOST_WINDOW";
    case JAL_ADMIN_CREATE_QUEUE:
        return "CREATE_QUEUE";
    case JAL_ADMIN_DESTROY_QUEUE:
        return "DESTROY_QUEUE";
    case JAL_ADMIN_QUEUE_STATUS:
        return "QUEUE_STATUS";
    case JAL_ADMIN_RESET_QUEUE:
        return "RESET_QUEUE";
    case JAL_ADMIN_GET_USAGE:
        return "GET_USAGE";
    case JAL_ADMIN_FW_DOWNLOAD:
        return "FW_DOWNLOAD";
    case JAL_ADMIN_FW_ACTIVATE:
        return "FW_ACTIVATE";
    case JAL_ADMIN_FW_STATUS:
        return "FW_STATUS";
    case JAL_ADMIN_DEBUG_FAULT:
        return "DEBUG_FAULT";
    }
    return 0;
}

struct jal_admin_sqe {
    uint8_t opcode;
    uint8_t flags;      /* must be zero */
    uint16_t cid;       /* command id chosen by the host, echoed in the completion */
    uint32_t reserved0; /* must be zero */
    uint64_t data_addr; /* host bus address of the data buffer, 0 if none */
    uint32_t data_len;  /* bytes; at most JAL_ADMIN_DATA_MAX */
    uint32_t reserved1; /* must be zero */
    uint32_t cdw[10];   /* command-specific */
};
JAL_ASSERT_SIZE(struct jal_admin_sqe, 64);
JAL_ASSERT_OFFSET(struct jal_admin_sqe, cid, 2);
JAL_ASSERT_OFFSET(struct jal_admin_sqe, data_addr, 8);
JAL_ASSERT_OFFSET(struct jal_admin_sqe, data_len, 16);
JAL_ASSERT_OFFSET(struct jal_admin_sqe, cdw, 24);

#define JAL_ADMIN_DATA_MAX (1u << 20)

struct jal_admin_cqe {
    uint32_t result;  /* command-specific (bytes written, feature value, ...) */
    uint32_t status;  /* enum jal_status */
    uint16_t sq_head; /* firmware's SQ head after this command: slots up to it are free */
    uint16_t cid;
    uint16_t reserved;
    uint16_t flags; /* bit 0: phase; written last */
};
JAL_ASSERT_SIZE(struct jal_admin_cqe, 16);
JAL_ASSERT_OFFSET(struct jal_admin_cqe, status, 4);
JAL_ASSERT_OFFSET(struct jal_admin_cqe, sq_head, 8);
JAL_ASSERT_OFFSET(struct jal_admin_cqe, flags, 14);

#define JAL_ADMIN_CQE_PHASE 0x1u

/* Features (GET_FEATURE / SET_FEATURE). */
enum jal_feature {
    JAL_FEATURE_POWER_LIMIT = 1, /* package power limit, milliwatts; bounds in identify */
    /* The power limit applied at every boot, kept across resets (not power cycles); setting
     * it also sets the limit in force. 0 clears it (boots return to the TDP). Since 1.6. */
    JAL_FEATURE_POWER_LIMIT_PERSISTENT = 2,
};

/* HOST_WINDOW (since 1.11). A window is a bus range [address, address + bytes) of one host
 * space of the calling function; the command processor lets a queue whose context has a host
 * space name host memory (copies, signals, reports, its ring) only inside one of that
 * space's windows, else the packet fails DMA_FAULT. A kernel driver that serves several
 * processes through one function gives each open file a space and a window per buffer. */
enum jal_window_op {
    JAL_WINDOW_ADD = 1,    /* INVALID_FIELD: empty, wraps, or not page-aligned; BUSY: table full */
    JAL_WINDOW_REMOVE = 2, /* the window added with this address and size; INVALID_FIELD if none */
    JAL_WINDOW_CLEAR = 3,  /* every window of the space (address and bytes must be 0) */
};
#define JAL_HOST_WINDOWS 4096u /* windows in the command processor's table, all functions */

enum jal_reset_kind {
    JAL_RESET_CHIP = 1, /* reboot firmware, retrain, lose all queues and contexts */
};

/* DEBUG_FAULT: faults injected at run time (docs/reliability.md, "Fault model"). Privileged.
 * cdw[1..3] are the arguments; unused ones must be zero. Since 1.7 except HANG_MAIN_LOOP. */
enum jal_debug_fault {
    JAL_DEBUG_FAULT_HANG_MAIN_LOOP = 1,  /* firmware stops feeding its watchdog */
    JAL_DEBUG_FAULT_SLICE_FAIL = 2,      /* cdw[1] logical slice: the dispatch running on it (or
					  * the next one to use it) fails HW_FAILED */
    JAL_DEBUG_FAULT_SLICE_HANG = 3,      /* cdw[1] logical slice: it stops; the command processor's
					  * dispatch timeout fails that dispatch with TIMEOUT */
    JAL_DEBUG_FAULT_HBM_LANE = 4,        /* cdw[1] channel, cdw[2] physical lane: the lane dies and
					  * the firmware retrains the channel (repair or fail) */
    JAL_DEBUG_FAULT_ECC_CORRECTED = 5,   /* cdw[1] channel, cdw[2] errors (1..1000) */
    JAL_DEBUG_FAULT_ECC_UNCORRECTED = 6, /* cdw[1] channel, cdw[2] page in the channel: the page is
					   * poisoned (reads fail ECC_UNCORRECTED) and retired */
    JAL_DEBUG_FAULT_AMBIENT = 7,         /* cdw[1] inlet temperature, milli-degrees C (int32) */
    JAL_DEBUG_FAULT_LOAD = 8,            /* cdw[1] synthetic load, watts at full clock (0: none) */
    JAL_DEBUG_FAULT_CRASH = 9,           /* the firmware faults; the watchdog resets the core */
    JAL_DEBUG_FAULT_LINK_LANE = 10,      /* cdw[1] fabric port (0-15), cdw[2] lane (0-3): the lane
					  * dies and the firmware retrains the port (since 1.8) */
};
#define JAL_DEBUG_FAULT_COUNT 11 /* one past the last kind */
#define JAL_DEBUG_ECC_MAX 1000u

/* ---- Contexts and device memory ---- */
#define JAL_MAX_CONTEXTS 64      /* (chosen) ids 1..63 */
#define JAL_PAGE_SIZE (2u << 20) /* (chosen) device page: 2 MiB */
#define JAL_MAX_ALLOCATIONS 2048 /* (chosen) live allocations per chip */
#define JAL_VA_BASE (1ull << 40) /* device virtual addresses start here */

enum jal_placement {
    JAL_PLACE_SLICE = 1,       /* every page on the one slice of the mask */
    JAL_PLACE_INTERLEAVED = 2, /* page i on the (i mod n)-th slice of the mask, ascending */
    JAL_PLACE_REPLICATED = 3,  /* a full copy on every slice of the mask; a slice reads its
				    * own copy, host and device writes update every copy */
    JAL_PLACE_PEER = 4,        /* (1.8) pages of another chip, imported (IMPORT_PEER) */
};

/* Peer memory (1.8): an export is a slot of the exporting chip's export table, which lives
 * in its HBM at JAL_EXPORT_TABLE_PA (the last page, never allocated) so that importing chips
 * read it over the fabric. */
#define JAL_MAX_EXPORTS 512      /* (chosen) slots of 4 KiB: one 2 MiB page */
#define JAL_EXPORT_MAX_PAGES 510 /* (chosen) pages of one export (1020 MiB) */
#define JAL_EXPORT_TABLE_PA (JAL_HBM_TOTAL_BYTES - JAL_PAGE_SIZE)

struct jal_export_entry {
    uint64_t key;   /* 0: free or revoked */
    uint32_t pages; /* entries of pa in use */
    uint32_t reserved;
    uint64_t pa[JAL_EXPORT_MAX_PAGES]; /* physical page of each exported page */
};
JAL_ASSERT_SIZE(struct jal_export_entry, 4096);

struct jal_mem_export_reply {
    uint64_t key;    /* the secret an importer names with the handle */
    uint32_t handle; /* export slot */
    uint32_t chip;   /* exporting chip, domain-wide id (~0: in no fabric domain) */
    uint64_t va;     /* exported range, in the exporting context */
    uint64_t size;
    uint32_t pages;
    uint32_t reserved0;
    uint64_t reserved[2];
};
JAL_ASSERT_SIZE(struct jal_mem_export_reply, 56);

struct jal_mem_alloc_reply {
    uint64_t va;
    uint64_t size;       /* rounded up to whole pages */
    uint64_t slice_mask; /* logical slices holding it */
    uint32_t placement;  /* enum jal_placement */
    uint32_t page_size;
    uint32_t pages;    /* virtual pages */
    uint32_t replicas; /* copies of each page (1 unless replicated) */
    uint64_t reserved[2];
};
JAL_ASSERT_SIZE(struct jal_mem_alloc_reply, 56);

struct jal_placement_header {
    uint64_t va;
    uint32_t first_page;
    uint32_t count; /* entries that follow: pages x replicas, page-major */
    uint32_t pages; /* of the whole allocation */
    uint32_t replicas;
    uint64_t reserved;
};
JAL_ASSERT_SIZE(struct jal_placement_header, 32);

struct jal_page_placement {
    uint64_t phys; /* device physical address of the page (see chip.h map) */
    uint8_t slice; /* logical slice */
    uint8_t replica;
    uint8_t channel_lo; /* HBM channel of the page, low byte (channels fit 8 bits) */
    uint8_t reserved[5];
};
JAL_ASSERT_SIZE(struct jal_page_placement, 16);

struct jal_queue_status {
    uint32_t queue_id;
    uint32_t state; /* enum jal_queue_state (queue.h) */
    uint32_t context;
    uint32_t size;             /* packets */
    uint64_t read_index;       /* packets retired */
    uint64_t write_index;      /* last doorbell value */
    uint32_t last_error;       /* jal_status of the last failed packet, 0 if none */
    uint32_t errors;           /* failed packets since creation or reset */
    uint64_t last_error_index; /* packet index of the last failure */
    uint64_t reserved[2];
};
JAL_ASSERT_SIZE(struct jal_queue_status, 64);

/* GET_USAGE: contexts, queues and device memory, per host function and per slice (what
 * `jalctl ps` shows). Slices are logical (as the host allocates on them); pages are
 * JAL_PAGE_SIZE and count every replica. */
struct jal_usage_function {
    uint32_t function;
    uint32_t present; /* 1 while a client is attached as this function */
    uint32_t contexts;
    uint32_t queues;
    uint32_t allocations;
    uint32_t pages;                       /* device memory held */
    uint16_t slice_pages[JAL_NUM_SLICES]; /* of those, on each logical slice */
    uint64_t reserved;
};
JAL_ASSERT_SIZE(struct jal_usage_function, 24 + 2 * JAL_NUM_SLICES + 8);

#define JAL_USAGE_FUNCTIONS 8 /* = JAL_MGMT_MAX_FUNCS (mgmt.h) */

struct jal_usage {
    uint32_t struct_size; /* sizeof(struct jal_usage) as the firmware knows it */
    uint32_t page_size;   /* JAL_PAGE_SIZE */
    uint32_t slices;      /* logical slices (enabled) */
    uint32_t contexts;    /* live, chip-wide */
    uint32_t queues;
    uint32_t allocations;
    uint32_t pages_total; /* usable pages: trained channels behind enabled slices */
    uint32_t pages_free;
    uint16_t slice_pages_total[JAL_NUM_SLICES]; /* per logical slice */
    uint16_t slice_pages_free[JAL_NUM_SLICES];
    uint64_t reserved[4];
    struct jal_usage_function functions[JAL_USAGE_FUNCTIONS];
};
JAL_ASSERT_OFFSET(struct jal_usage, slice_pages_total, 32);
JAL_ASSERT_OFFSET(struct jal_usage, functions, 32 + 4 * JAL_NUM_SLICES + 32);

enum jal_chip_state {
    JAL_CHIP_STATE_BOOTING = 0,
    JAL_CHIP_STATE_READY = 1,
    JAL_CHIP_STATE_FAILED = 2,
};

/* IDENTIFY */
struct jal_identify {
    uint32_t struct_size; /* sizeof(struct jal_identify) as the firmware knows it */
    uint32_t if_version;  /* JAL_HW_VERSION */
    uint32_t fw_version;  /* major << 16 | minor << 8 | patch */
    uint32_t state;       /* enum jal_chip_state */
    char fw_build[32];    /* NUL-terminated build identifier */
    char model[32];       /* NUL-terminated product name */
    char serial[32];      /* NUL-terminated serial number */
    uint32_t chip_index;
    uint32_t boot_count; /* boots since power-on, including resets */
    uint32_t slices_total;
    uint32_t slices_enabled;
    uint64_t slices_enabled_mask; /* physical slices */
    uint32_t hbm_stacks;
    uint32_t hbm_channels_total;
    uint32_t hbm_channels_ok;
    uint32_t reserved0;
    uint64_t hbm_bytes_total;
    uint64_t hbm_bytes_usable; /* capacity of trained channels behind enabled slices */
    uint32_t power_limit_mw;
    uint32_t power_limit_min_mw;
    uint32_t power_limit_max_mw;
    uint32_t tdp_mw;
    uint32_t clock_min_mhz;
    uint32_t clock_max_mhz;
    uint32_t temp_limit_mc; /* junction limit, milli-degrees Celsius */
    uint32_t reserved1;
    uint8_t reserved[312]; /* must be zero; grows here in minor versions */
};
JAL_ASSERT_SIZE(struct jal_identify, 512);
JAL_ASSERT_OFFSET(struct jal_identify, fw_build, 16);
JAL_ASSERT_OFFSET(struct jal_identify, chip_index, 112);
JAL_ASSERT_OFFSET(struct jal_identify, slices_enabled_mask, 128);
JAL_ASSERT_OFFSET(struct jal_identify, hbm_bytes_total, 152);
JAL_ASSERT_OFFSET(struct jal_identify, power_limit_mw, 168);
JAL_ASSERT_OFFSET(struct jal_identify, reserved, 200);

/* GET_SLICE_MAP: physical slices; logical ids number enabled slices densely so harvested
 * slices vanish from the host's view. */
enum jal_slice_state {
    JAL_SLICE_ENABLED = 0,
    JAL_SLICE_FUSED = 1,       /* fused off at manufacturing */
    JAL_SLICE_FAILED_BIST = 2, /* failed self-test at boot */
    JAL_SLICE_BIST_TIMEOUT = 3,
    JAL_SLICE_NO_MEMORY = 4, /* all of its HBM channels failed */
};

struct jal_slice_info {
    uint8_t state;       /* enum jal_slice_state */
    uint8_t logical_id;  /* 0xff when not enabled */
    uint8_t channels_ok; /* trained HBM channels of the slice's three */
    uint8_t power_gated; /* 1 while idle and gated */
    uint32_t bist_us;    /* self-test duration */
};
JAL_ASSERT_SIZE(struct jal_slice_info, 8);

struct jal_slice_map {
    uint32_t num_slices; /* JAL_NUM_SLICES */
    uint32_t num_enabled;
    uint64_t fused_mask;
    uint64_t failed_mask; /* failed or timed-out self-test */
    uint64_t enabled_mask;
    uint8_t logical_to_physical[JAL_NUM_SLICES]; /* 0xff past num_enabled */
    struct jal_slice_info slices[JAL_NUM_SLICES];
};
JAL_ASSERT_SIZE(struct jal_slice_map, 32 + 64 + 512);
JAL_ASSERT_OFFSET(struct jal_slice_map, logical_to_physical, 32);
JAL_ASSERT_OFFSET(struct jal_slice_map, slices, 96);

/* GET_HBM_REPORT */
enum jal_hbm_channel_status {
    JAL_HBM_CH_UNTRAINED = 0,
    JAL_HBM_CH_OK = 1,
    JAL_HBM_CH_REPAIRED = 2, /* ok, with dead lanes remapped to spares */
    JAL_HBM_CH_FAILED = 3,   /* capacity removed */
};

struct jal_hbm_lane_report {
    uint8_t read_delay;  /* trained tap, 0..JAL_HBM_DELAY_TAPS-1 */
    uint8_t read_width;  /* passing taps in the read eye */
    uint8_t read_margin; /* taps from the trained point to the nearer eye edge */
    uint8_t write_delay;
    uint8_t write_width;
    uint8_t write_margin;
    uint8_t flags; /* JAL_HBM_LANE_* */
    uint8_t reserved;
};
JAL_ASSERT_SIZE(struct jal_hbm_lane_report, 8);

#define JAL_HBM_LANE_DEAD (1u << 0)   /* failed connectivity */
#define JAL_HBM_LANE_SPARE (1u << 1)  /* a spare lane */
#define JAL_HBM_LANE_IN_USE (1u << 2) /* carries data (a DQ lane, or a spare standing in) */
#define JAL_HBM_LANE_NOEYE (1u << 3)  /* no passing window found */

struct jal_hbm_channel_report {
    uint8_t status; /* enum jal_hbm_channel_status */
    uint8_t stack;
    uint8_t vref;                        /* trained Vref step, 0..JAL_HBM_VREF_STEPS-1 */
    uint8_t dead_lanes;                  /* lanes that failed connectivity */
    uint8_t repair[JAL_HBM_SPARE_LANES]; /* DQ lane carried by spare k, 0xff if unused */
    uint32_t memtest_errors;
    uint32_t training_us;     /* modelled time spent training the channel */
    uint32_t ecc_corrected;   /* since power-on (since 1.6) */
    uint32_t ecc_uncorrected; /* since power-on (since 1.6) */
    uint32_t retired_pages;   /* of the channel, taken out of service since boot (since 1.6) */
    uint32_t reserved[1];
    struct jal_hbm_lane_report lanes[JAL_HBM_LANES];
};
JAL_ASSERT_SIZE(struct jal_hbm_channel_report, 32 + 8 * JAL_HBM_LANES);

struct jal_hbm_report_header {
    uint32_t first_channel;
    uint32_t count;       /* channel reports that follow */
    uint32_t channels_ok; /* over the whole chip (OK or REPAIRED) */
    uint32_t channels_failed;
    uint32_t stacks_failed_mask;
    uint32_t reserved[3];
};
JAL_ASSERT_SIZE(struct jal_hbm_report_header, 32);

/* GET_LINK_REPORT (since 1.8): the fabric ports, docs/fabric.md "Link training". */
enum jal_link_kind {
    JAL_LINK_KIND_SCALE_UP = 1,
    JAL_LINK_KIND_SCALE_OUT = 2,
};

enum jal_link_port_state {
    JAL_LINK_PORT_NOT_CABLED = 0,
    JAL_LINK_PORT_DOWN = 1,
    JAL_LINK_PORT_UP = 2,       /* at full width */
    JAL_LINK_PORT_DEGRADED = 3, /* up on fewer lanes */
};

/* Why a cabled port is down (or degraded), argument `reason` of the LINK_* events. */
enum jal_link_down_reason {
    JAL_LINK_DOWN_NONE = 0,
    JAL_LINK_DOWN_NOT_TRAINED = 1,
    JAL_LINK_DOWN_NO_PEER = 2,   /* the far end did not answer (not joined yet, or gone) */
    JAL_LINK_DOWN_NO_LANES = 3,  /* it answered, but no lane locked with margin */
    JAL_LINK_DOWN_LOST = 4,      /* went down in service (transfer failed, peer lost, console) */
    JAL_LINK_DOWN_BAD_LANES = 5, /* up on fewer lanes: the others failed or lacked margin */
};

#define JAL_LINK_PEER_ANY 0xffffu        /* peer_chip of a switched port: any chip on the plane */
#define JAL_LINK_PORT_SWITCHED (1u << 0) /* flags: cabled to switch plane `peer_port` */

struct jal_link_port_report {
    uint8_t port;          /* 0-11 scale-up, 12-15 scale-out */
    uint8_t kind;          /* enum jal_link_kind */
    uint8_t state;         /* enum jal_link_port_state */
    uint8_t reason;        /* enum jal_link_down_reason */
    uint8_t lanes;         /* lanes in use, 0 when down */
    uint8_t lanes_ok_mask; /* lanes that locked with margin at the last training */
    uint8_t flags;         /* JAL_LINK_PORT_* */
    uint8_t reserved0;
    uint16_t peer_chip;     /* the far end's domain chip id, JAL_LINK_PEER_ANY if switched */
    uint16_t peer_port;     /* its port, or the switch plane */
    uint32_t mbytes_per_s;  /* each way, at the width in use; 0 when down */
    uint16_t margin_mui[4]; /* JAL_LINK_LANES: eye margin at the last training; 0 none */
    uint32_t trainings;     /* TRAIN_LANES since boot */
    uint32_t retrains;      /* of those, retrains after a lane lacked margin, or of a
                                   * port that was down */
    uint32_t errors;        /* since power-on */
    uint32_t reserved1;
    uint64_t tx_bytes; /* since power-on */
    uint64_t rx_bytes;
    uint64_t transfers;
};
JAL_ASSERT_SIZE(struct jal_link_port_report, 64);
JAL_ASSERT_OFFSET(struct jal_link_port_report, peer_chip, 8);
JAL_ASSERT_OFFSET(struct jal_link_port_report, margin_mui, 16);
JAL_ASSERT_OFFSET(struct jal_link_port_report, tx_bytes, 40);

struct jal_link_report_header {
    uint32_t first_port;
    uint32_t count;        /* port reports that follow */
    uint32_t self_chip;    /* this chip's domain chip id (JAL_LINK_SELF) */
    uint32_t ports_cabled; /* over the whole chip */
    uint32_t ports_up;     /* of those, up (full or degraded width) */
    uint32_t ports_degraded;
    uint32_t reserved[2];
};
JAL_ASSERT_SIZE(struct jal_link_report_header, 32);

/* GET_LOG */
enum jal_log_id {
    JAL_LOG_EVENTS = 1,     /* struct jal_log_event entries */
    JAL_LOG_POST_TRAIL = 2, /* struct jal_post_entry entries of the last boot */
};

struct jal_log_page {
    uint32_t log_id;
    uint32_t entry_size;
    uint32_t count;     /* entries in this page */
    uint32_t first_seq; /* sequence number of the first entry in this page */
    uint32_t next_seq;  /* sequence number the next entry logged will take */
    uint32_t lost;      /* entries overwritten before they could be read (ring wrapped) */
    uint32_t reserved[2];
};
JAL_ASSERT_SIZE(struct jal_log_page, 32);

enum jal_log_severity {
    JAL_SEV_DEBUG = 0,
    JAL_SEV_INFO = 1,
    JAL_SEV_WARN = 2,
    JAL_SEV_ERROR = 3,
    JAL_SEV_FATAL = 4,
};

enum jal_log_source {
    JAL_SRC_BOOT = 1,
    JAL_SRC_SLICE = 2,
    JAL_SRC_HBM = 3,
    JAL_SRC_POWER = 4,
    JAL_SRC_ADMIN = 5,
    JAL_SRC_WATCHDOG = 6,
    JAL_SRC_LINK = 7, /* since 1.8 */
};

struct jal_log_event {
    uint64_t timestamp_us; /* modelled time since power-on */
    uint32_t seq;
    uint16_t code;    /* source-specific event code */
    uint8_t severity; /* enum jal_log_severity */
    uint8_t source;   /* enum jal_log_source */
    uint32_t args[4];
    char text[32]; /* NUL-terminated, human summary */
};
JAL_ASSERT_SIZE(struct jal_log_event, 64);
JAL_ASSERT_OFFSET(struct jal_log_event, args, 16);
JAL_ASSERT_OFFSET(struct jal_log_event, text, 32);

struct jal_post_entry {
    uint64_t timestamp_us;
    uint16_t post_code;
    uint16_t step;   /* index in the boot table */
    uint32_t status; /* enum jal_status of the step */
};
JAL_ASSERT_SIZE(struct jal_post_entry, 16);

#endif
