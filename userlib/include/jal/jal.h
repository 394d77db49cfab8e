/* libjal: the runtime API of Jalapeño devices (stable C ABI).
 *
 * Objects are opaque handles. Every call returns a jal_status_t (the codes of
 * jal/hw/status.h, shared with the device: JAL_STATUS_OK is 0); after a failure,
 * jal_last_error_message() returns a description of it for the calling thread.
 * Structs passed in or out begin with struct_size: set it to sizeof the struct as your
 * header defines it, so later versions can grow them. Every call may be made from any
 * thread; see docs/userlib.md for the programming model and the AQL queue protocol.
 *
 *   device  - one chip (jal_device_open); closing it is deferred until its last
 *             context, queue, signal and host buffer is gone.
 *   context - a device virtual address space; memory and queues live in one.
 *   memory  - device memory with an explicit physical placement.
 *   host buffer - pinned host memory the device can DMA to (it has a bus address).
 *   queue   - a user-mode AQL ring of 64-byte packets; several producer threads may submit.
 *   signal  - a 64-bit memory signal; packets decrement their completion signal by one.
 *
 * Device reset: when the chip is reset under an open device (jalctl reset --force, the
 * firmware watchdog, the kernel driver), every call on its handles fails with
 * JAL_STATUS_DEVICE_RESET and pending jal_signal_wait calls return it within a second;
 * releasing the handles and jal_device_close still succeed. To carry on, release them,
 * close the device and open it again (docs/userlib.md, "Device reset").
 */
#ifndef JAL_JAL_H
#define JAL_JAL_H

#include <stddef.h>
#include <stdint.h>

#include <jal/api.h>
#include <jal/hw/admin.h>
#include <jal/hw/isa.h> /* enum jal_dtype of the communicators */
#include <jal/hw/queue.h>
#include <jal/hw/status.h>
#include <jal/hw/telemetry.h>

#ifdef __cplusplus
extern "C" {
#endif

#define JAL_API_VERSION_MAJOR 1
#define JAL_API_VERSION_MINOR \
    5 /* 1.1: jal_queue_dispatch; 1.2: JAL_STATUS_DEVICE_RESET;
                                  * 1.3: memory info, telemetry, events, profiler, jal_kernel_*;
                                  * 1.4: peer memory (jal_mem_export, jal_peer_map);
                                  * 1.5: value packets, communicators (jal_comm_*) */

typedef uint32_t jal_status_t; /* enum jal_status */

typedef struct jal_device_s* jal_device_t;
typedef struct jal_context_s* jal_context_t;
typedef struct jal_mem_s* jal_mem_t;
typedef struct jal_host_buffer_s* jal_host_buffer_t;
typedef struct jal_queue_s* jal_queue_t;
typedef struct jal_signal_s* jal_signal_t;

/* ---- Errors and logging ---- */

/* The message of the last failed call on this thread ("" if none). Valid until the next
 * failing call on the thread. */
JAL_API const char* jal_last_error_message(void);
/* "ok", "page fault", ... for any status. */
JAL_API const char* jal_status_string(jal_status_t status);
/* (major << 16) | minor of this library's API. */
JAL_API uint32_t jal_api_version(void);

enum jal_log_level { JAL_LOG_INFO = 0, JAL_LOG_WARN = 1, JAL_LOG_ERROR = 2 };
typedef void (*jal_log_fn)(int level, const char* message, void* user);
/* Where diagnostics such as leak reports go; NULL restores the default (stderr). */
JAL_API jal_status_t jal_set_log_handler(jal_log_fn fn, void* user);

/* ---- Devices ---- */

/* Device indices present (the jalN.sock sockets of the emulator directory; emu_dir NULL:
 * the default, $JAL_EMU_DIR). Writes up to `capacity` indices, sets *count to the total. */
JAL_API jal_status_t jal_device_enumerate(const char* emu_dir, uint32_t* indices, uint32_t capacity,
                                          uint32_t* count);

typedef struct jal_open_options {
    uint32_t struct_size;
    uint32_t ready_timeout_ms; /* wait this long for the chip to boot (0: 30 s) */
    const char* emu_dir;       /* NULL: the default */
    const char* client_name;   /* NULL: "libjal" */
    uint32_t admin_timeout_ms; /* per admin command, without firmware progress (0: 5 s) */
    uint32_t reserved;
} jal_open_options_t;

/* Opens device `index` and waits until it has booted. options may be NULL. */
JAL_API jal_status_t jal_device_open(uint32_t index, const jal_open_options_t* options,
                                     jal_device_t* out);
JAL_API jal_status_t jal_device_close(jal_device_t device);
/* IDENTIFY (struct jal_identify of jal/hw/admin.h). */
JAL_API jal_status_t jal_device_identify(jal_device_t device, struct jal_identify* out);

/* Device memory of the whole chip (API 1.3; firmware of device interface 1.6, else
 * JAL_STATUS_UNSUPPORTED). Bytes count whole 2 MiB pages, every replica. */
typedef struct jal_device_memory_info {
    uint32_t struct_size;
    uint32_t slices;       /* logical slices: entries of slice_pages_* in use */
    uint64_t total_bytes;  /* HBM of the enabled slices' channels in service */
    uint64_t free_bytes;   /* of it, not allocated by any client */
    uint64_t used_bytes;   /* total_bytes - free_bytes */
    uint64_t client_bytes; /* of it, held by this device handle's contexts */
    uint32_t allocations;  /* live allocations, every client */
    uint32_t contexts;     /* live contexts, every client */
    uint32_t page_size;    /* bytes */
    uint32_t reserved;
    uint32_t slice_pages_total[JAL_NUM_SLICES]; /* by logical slice */
    uint32_t slice_pages_free[JAL_NUM_SLICES];
} jal_device_memory_info_t;
JAL_API jal_status_t jal_device_memory_info(jal_device_t device, jal_device_memory_info_t* out);

/* The firmware's latest 1 ms telemetry sample (API 1.3): power, rail currents and voltages,
 * temperatures, clocks, the limiter holding the clock, energy, ECC counts (struct
 * jal_telemetry of jal/hw/telemetry.h, units in the field names, times in the chip's
 * modelled time). Set out->struct_size to sizeof(struct jal_telemetry) as your header
 * defines it; the call fills that much and sets struct_size to the bytes it filled. */
JAL_API jal_status_t jal_device_telemetry(jal_device_t device, struct jal_telemetry* out);

/* ---- Contexts ---- */

JAL_API jal_status_t jal_context_create(jal_device_t device, jal_context_t* out);
/* Destroys the context. Allocations and queues still in it are freed by the device,
 * logged one by one, and counted in *leaked (may be NULL). Their handles stay valid only
 * to be released: jal_mem_free / jal_queue_destroy then do nothing else. */
JAL_API jal_status_t jal_context_destroy(jal_context_t context, uint32_t* leaked);
JAL_API jal_status_t jal_context_id(jal_context_t context, uint32_t* id);

/* ---- Device memory ---- */

/* Allocates `size` bytes (rounded up to whole 2 MiB device pages) in the context.
 * placement: enum jal_placement (SLICE: every page on the one slice of the mask;
 * INTERLEAVED: page i on the (i mod n)-th slice of the mask; REPLICATED: a copy on every
 * slice of the mask). slice_mask: logical slices (0..identify.slices_enabled-1).
 * alignment: bytes, a power of two, 0 for the page size. */
JAL_API jal_status_t jal_mem_alloc(jal_context_t context, uint64_t size, uint32_t placement,
                                   uint64_t slice_mask, uint64_t alignment, jal_mem_t* out);
/* Frees it; the range may be handed out again. */
JAL_API jal_status_t jal_mem_free(jal_mem_t mem);

typedef struct jal_mem_info {
    uint32_t struct_size;
    uint32_t placement;  /* enum jal_placement */
    uint64_t va;         /* device virtual address */
    uint64_t size;       /* bytes, whole pages */
    uint64_t slice_mask; /* logical slices holding it */
    uint32_t page_size;
    uint32_t pages;
    uint32_t replicas; /* copies of each page */
    uint32_t reserved;
} jal_mem_info_t;
JAL_API jal_status_t jal_mem_get_info(jal_mem_t mem, jal_mem_info_t* out);
/* Physical placement of pages from first_page on: (pages x replicas) entries, page-major
 * (struct jal_page_placement: physical address, logical slice, replica, HBM channel).
 * Writes up to `capacity`, sets *count to the number written. */
JAL_API jal_status_t jal_mem_placement(jal_mem_t mem, uint32_t first_page,
                                       struct jal_page_placement* out, uint32_t capacity,
                                       uint32_t* count);

/* ---- Peer memory (API 1.4; device interface 1.8; docs/userlib.md, "Peer memory") ----
 *
 * A context maps another chip's device memory, like CUDA peer access: the owner exports a
 * range of an allocation, and a context on another chip of the same fabric domain imports
 * the export at an address of its own. COPY packets and tile programs of the importing
 * context then read and write the peer's memory over the chips' links
 * (JAL_STATUS_LINK_DOWN when the peer cannot be reached). An export lasts until its
 * allocation is freed (or its context destroyed); from then on every access through an
 * import of it fails JAL_STATUS_PERMISSION. */
typedef struct jal_peer_export {
    uint32_t struct_size;
    uint32_t chip;   /* exporting chip, domain-wide id */
    uint32_t handle; /* export slot on that chip */
    uint32_t pages;  /* 2 MiB pages */
    uint64_t key;    /* the secret that names it: hand it only to whom may map it */
    uint64_t size;   /* bytes, whole pages */
} jal_peer_export_t;
/* Exports [offset, offset + size) of mem (offset a multiple of the 2 MiB page; size rounded
 * up to pages, at most JAL_EXPORT_MAX_PAGES of them). To pass to another process. */
JAL_API jal_status_t jal_mem_export(jal_mem_t mem, uint64_t offset, uint64_t size,
                                    jal_peer_export_t* out);
/* Maps an export (of another chip) in `context`; jal_mem_get_info(*out) gives its address
 * (placement JAL_PLACE_PEER). jal_peer_unmap (or jal_mem_free) unmaps it. */
JAL_API jal_status_t jal_peer_import(jal_context_t context, const jal_peer_export_t* exported,
                                     jal_mem_t* out);
/* Both in one call, for a peer allocation this process holds: maps [offset, offset + size)
 * of peer_mem (on another device) in `context`; *local_va (may be NULL) is its address. */
JAL_API jal_status_t jal_peer_map(jal_context_t context, jal_mem_t peer_mem, uint64_t offset,
                                  uint64_t size, jal_mem_t* out, uint64_t* local_va);
JAL_API jal_status_t jal_peer_unmap(jal_mem_t mapping);

/* ---- Pinned host memory ---- */

/* Host memory the device can DMA to, zero-filled; size is rounded up to host pages. */
JAL_API jal_status_t jal_host_alloc(jal_device_t device, uint64_t size, jal_host_buffer_t* out);
JAL_API jal_status_t jal_host_free(jal_host_buffer_t buffer);
/* Host pointer, the bus address the device uses for it, and its size (any may be NULL). */
JAL_API jal_status_t jal_host_buffer_info(jal_host_buffer_t buffer, void** ptr, uint64_t* bus_addr,
                                          uint64_t* size);

/* ---- Signals ---- */

#define JAL_SIGNAL_INTERRUPT \
    (1u << 0) /* packets completing it raise their queue's MSI-X
					* vector, so it can be waited for by sleeping */
/* (API 1.3) jal_queue_dispatch with it as the completion records when the dispatch ran on
 * the device (jal_signal_get_times, jal_signal_elapsed_ns). */
#define JAL_SIGNAL_TIMESTAMPS (1u << 1)

JAL_API jal_status_t jal_signal_create(jal_device_t device, int64_t initial, uint32_t flags,
                                       jal_signal_t* out);
/* The caller makes sure no packet still names it. */
JAL_API jal_status_t jal_signal_destroy(jal_signal_t signal);
/* The value, and the status of the packet that last completed it (either may be NULL). */
JAL_API jal_status_t jal_signal_load(jal_signal_t signal, int64_t* value, uint32_t* packet_status);
/* Sets the value and clears the packet status. */
JAL_API jal_status_t jal_signal_store(jal_signal_t signal, int64_t value);
/* Bus address of the struct jal_signal (for hand-built packets). */
JAL_API jal_status_t jal_signal_bus_addr(jal_signal_t signal, uint64_t* bus_addr);

enum jal_signal_condition {
    JAL_SIGNAL_EQ = 0,
    JAL_SIGNAL_NE = 1,
    JAL_SIGNAL_LT = 2,
    JAL_SIGNAL_GTE = 3,
};

enum jal_wait_mode {
    JAL_WAIT_POLL = 1,      /* spin on the value: lowest latency, burns a core */
    JAL_WAIT_INTERRUPT = 2, /* sleep on the queue's MSI-X eventfd */
    JAL_WAIT_HYBRID = 3,    /* spin briefly (50 us), then sleep */
};

#define JAL_TIMEOUT_INFINITE UINT64_MAX

/* Waits until `value <condition> compare` holds: JAL_STATUS_OK, or JAL_STATUS_TIMEOUT after
 * timeout_ns. *value and *packet_status (may be NULL) receive what was last read; a packet
 * that failed completes its signal all the same, with its error in *packet_status.
 * INTERRUPT and HYBRID need a signal created with JAL_SIGNAL_INTERRUPT. */
JAL_API jal_status_t jal_signal_wait(jal_signal_t signal, uint32_t condition, int64_t compare,
                                     uint64_t timeout_ns, uint32_t mode, int64_t* value,
                                     uint32_t* packet_status);

/* ---- Queues ---- */

/* A queue of `size` packets (a power of two, 16..65536) in the context, raising MSI-X
 * `vector` (1..15; 0: the library picks) for packets whose signal wants an interrupt. */
JAL_API jal_status_t jal_queue_create(jal_context_t context, uint32_t size, uint32_t vector,
                                      jal_queue_t* out);
JAL_API jal_status_t jal_queue_destroy(jal_queue_t queue);
/* QUEUE_STATUS (struct jal_queue_status of jal/hw/admin.h). */
JAL_API jal_status_t jal_queue_get_status(jal_queue_t queue, struct jal_queue_status* out);
/* Drops unexecuted packets and clears the queue's error. No thread may be submitting. */
JAL_API jal_status_t jal_queue_reset(jal_queue_t queue);
JAL_API jal_status_t jal_queue_id(jal_queue_t queue, uint32_t* id);
/* How long a submission waits for room in a full ring before it fails with TIMEOUT
 * (default: forever). After such a timeout the queue must be reset. */
JAL_API jal_status_t jal_queue_set_submit_timeout(jal_queue_t queue, uint64_t timeout_ns);

/* Packets. Each returns once the packet is published and the doorbell rung; `completion`
 * (may be NULL) is decremented by one when the packet retires, its status first. */
JAL_API jal_status_t jal_queue_nop(jal_queue_t queue, jal_signal_t completion);
/* dir: enum jal_copy_dir. Host addresses are bus addresses (jal_host_buffer_info), device
 * addresses device virtual addresses of the queue's context. */
JAL_API jal_status_t jal_queue_copy(jal_queue_t queue, uint32_t dir, uint64_t dst, uint64_t src,
                                    uint64_t size, jal_signal_t completion);
/* Waits (on the device) until every one of deps[0..count) is 0; count 1..5. */
JAL_API jal_status_t jal_queue_barrier_and(jal_queue_t queue, const jal_signal_t* deps,
                                           uint32_t count, jal_signal_t completion);
/* Writes `target` (op: enum jal_signal_op, SET/ADD/SUB operand). */
JAL_API jal_status_t jal_queue_signal(jal_queue_t queue, jal_signal_t target, uint32_t op,
                                      int64_t operand, jal_signal_t completion);
/* (API 1.5, device interface 1.9) A device word as a semaphore between queues and chips,
 * like CUDA's stream memory operations. write_value stores `value` at device address `addr`
 * (8-byte aligned; a peer chip's mapped memory too) once everything the queue did before is
 * visible; wait_value holds the queue until the word compares true (op: enum jal_value_op)
 * or `timeout_us` passes (0: no limit), then completes with TIMEOUT. `flags`: 0 or
 * JAL_PACKET_F_CHAIN (the packet runs only if the one before it on the queue completed OK,
 * else completes with that status). */
JAL_API jal_status_t jal_queue_write_value(jal_queue_t queue, uint64_t addr, uint64_t value,
                                           uint32_t flags, jal_signal_t completion);
JAL_API jal_status_t jal_queue_wait_value(jal_queue_t queue, uint64_t addr, uint32_t op,
                                          uint64_t value, uint32_t timeout_us, uint32_t flags,
                                          jal_signal_t completion);
/* A 64-byte packet as given (header word first; it is published last). */
JAL_API jal_status_t jal_queue_submit_raw(jal_queue_t queue, const void* packet);

/* A kernel dispatch (JAL_PACKET_DISPATCH, jal/hw/queue.h): every slice of slice_mask runs
 * the code object at device address code_object, reading its arguments from args. The
 * device validates the code object before any slice runs; a fault in any slice fails the
 * packet with that status. If report is not 0, the device writes a struct
 * jal_dispatch_report (fault slice, pc and opcode, modelled time, counters) at that host
 * bus address before completing the signal. */
typedef struct jal_dispatch_desc {
    uint32_t size;         /* sizeof(struct jal_dispatch_desc) */
    uint32_t flags;        /* JAL_DISPATCH_F_TIMING_ONLY: run for time only, no data */
    uint64_t code_object;  /* device address of a struct jal_code_object_header */
    uint64_t slice_mask;   /* logical slices, each usable; not 0 */
    uint64_t args;         /* device address of the argument buffer (JAL_SR_ARGS) */
    uint32_t budget_kinsn; /* per-slice instruction budget in thousands; 0: the default */
    uint32_t reserved;     /* must be zero */
    uint64_t report;       /* host bus address of a struct jal_dispatch_report, or 0 */
    /* (API 1.3) host bus address of a struct jal_dispatch_times the device fills, or 0:
     * then a JAL_SIGNAL_TIMESTAMPS completion or the profiler gets one from the library.
     * A desc of API 1.2's size (without it) is accepted. */
    uint64_t times;
} jal_dispatch_desc_t;
JAL_API jal_status_t jal_queue_dispatch(jal_queue_t queue, const struct jal_dispatch_desc* desc,
                                        jal_signal_t completion);

/* ---- Device timestamps and profiling (API 1.3; device interface 1.6) ----
 *
 * The device clock: the data plane's modelled time in nanoseconds (struct jal_dispatch_times
 * of jal/hw/queue.h), kept per physical slice: a dispatch starts when the last of its
 * slices is free and ends its modelled time later. The same clock as the modelled-time
 * process of jal-emu --trace; unrelated to the host's clocks. Only dispatches take time on
 * it. Host times are CLOCK_MONOTONIC nanoseconds. */

typedef struct jal_signal_times {
    uint32_t struct_size;
    uint32_t status;   /* enum jal_status of the dispatch */
    uint64_t start_ns; /* device clock */
    uint64_t end_ns;
    uint32_t slices; /* it ran on (0 if it failed before any ran) */
    uint32_t reserved;
} jal_signal_times_t;
/* When the latest dispatch submitted with this JAL_SIGNAL_TIMESTAMPS signal as its completion
 * ran. JAL_STATUS_NOT_READY until it has completed (or if no dispatch named the signal). */
JAL_API jal_status_t jal_signal_get_times(jal_signal_t signal, jal_signal_times_t* out);
/* end's end_ns - start's start_ns (like cudaEventElapsedTime): from the start of the
 * dispatch that completed `start` to the end of the one that completed `end`; the same
 * signal twice gives one dispatch's duration. NOT_READY as jal_signal_get_times;
 * INVALID_FIELD if end ended before start started. */
JAL_API jal_status_t jal_signal_elapsed_ns(jal_signal_t start, jal_signal_t end, uint64_t* ns);

typedef struct jal_dispatch_profile {
    uint32_t struct_size;
    uint32_t queue_id;
    uint64_t packet_index; /* in its queue */
    uint64_t code_object;  /* as in the desc */
    uint64_t slice_mask;
    uint32_t status; /* enum jal_status of the dispatch */
    uint32_t slices;
    uint64_t start_ns; /* device clock */
    uint64_t end_ns;
    uint64_t host_submit_ns;   /* CLOCK_MONOTONIC: jal_queue_dispatch published it */
    uint64_t host_complete_ns; /* CLOCK_MONOTONIC: the library saw it complete */
} jal_dispatch_profile_t;
typedef void (*jal_profiler_fn)(const jal_dispatch_profile_t* dispatch, void* user);
/* Calls fn once for every dispatch submitted through jal_queue_dispatch on this device
 * from now on (unless its desc names its own times record), after it completes, on a
 * library thread: one call at a time, each queue's dispatches in submission order.
 * NULL stops; either way the call returns once the previous fn has returned for the last
 * time (so fn must not call jal_device_set_profiler, nor release the device's last
 * handle). Profiled dispatches also raise their queue's interrupt. */
JAL_API jal_status_t jal_device_set_profiler(jal_device_t device, jal_profiler_fn fn, void* user);

/* ---- Kernels from text (API 1.3) ----
 *
 * The tile ISA's assembler (docs/tile-isa.md, "Assembler"): a program in text, by hand or
 * as jal-objdump prints it, becomes a code object in host memory. Copy its bytes into
 * device memory (jal_queue_copy) and name that address in a jal_dispatch_desc. */

typedef struct jal_kernel_s* jal_kernel_t;

typedef struct jal_asm_error {
    uint32_t struct_size;
    uint32_t line;   /* 1-based */
    uint32_t column; /* 1-based, in bytes */
    uint32_t reserved;
    char message[256]; /* NUL-terminated, without the position (may be cut short) */
} jal_asm_error_t;

/* Assembles `text` (NUL-terminated) into a validated code object. Bad input fails with
 * JAL_STATUS_INVALID_FIELD; jal_last_error_message() then says "line:column: what", and
 * *error (may be NULL; set error->struct_size) gets the parts. */
JAL_API jal_status_t jal_kernel_assemble(const char* text, jal_kernel_t* out,
                                         jal_asm_error_t* error);
JAL_API jal_status_t jal_kernel_destroy(jal_kernel_t kernel);
/* The code object's bytes (valid until jal_kernel_destroy) and size. */
JAL_API jal_status_t jal_kernel_code_object(jal_kernel_t kernel, const void** bytes,
                                            uint64_t* size);

typedef struct jal_kernel_info {
    uint32_t struct_size;
    uint32_t instructions;
    uint32_t args_size; /* bytes of the argument buffer the kernel reads (JAL_SR_ARGS) */
    uint32_t l1_bytes;  /* L1 each slice needs */
    uint32_t args;      /* entries of its argument table */
    uint32_t reserved;
    char name[64]; /* NUL-terminated */
} jal_kernel_info_t;
JAL_API jal_status_t jal_kernel_get_info(jal_kernel_t kernel, jal_kernel_info_t* out);

/* jal-objdump's listing of a code object (a malformed one is listed as far as readable,
 * after the validator's message). Writes up to `capacity` bytes including the NUL, sets
 * *length to the listing's length without it (call with capacity 0 to learn it). */
JAL_API jal_status_t jal_kernel_disassemble(const void* code_object, uint64_t size, char* text,
                                            uint64_t capacity, uint64_t* length);

/* ---- Bulk host I/O ---- */

/* Called as data lands on the device; return non-zero to cancel (JAL_STATUS_ABORTED). */
typedef int (*jal_progress_fn)(uint64_t done_bytes, uint64_t total_bytes, void* user);

#define JAL_LOAD_NO_DIRECT (1u << 0) /* do not try O_DIRECT */

typedef struct jal_load_options {
    uint32_t struct_size;
    uint32_t flags;       /* JAL_LOAD_* */
    uint32_t chunk_bytes; /* bounce buffer size (0: 4 MiB) */
    uint32_t depth;       /* reads in flight (0: 4) */
    jal_progress_fn progress;
    void* user;
} jal_load_options_t;

typedef struct jal_load_result {
    uint32_t struct_size;
    uint32_t used_direct_io; /* 1 if the file was read with O_DIRECT */
    uint64_t bytes;
} jal_load_result_t;

/* Reads file `path` into device memory at dst_va (at most `capacity` bytes: a larger file
 * fails with INVALID_LENGTH) through io_uring and pinned bounce buffers, each copied to
 * the device by `queue`. options and result may be NULL. */
JAL_API jal_status_t jal_load_file(jal_queue_t queue, const char* path, uint64_t dst_va,
                                   uint64_t capacity, const jal_load_options_t* options,
                                   jal_load_result_t* result);

/* ---- Communicators (API 1.5): collectives executed by the chips ----
 *
 * NCCL-style, over devices that reach each other's memory (a tray of jal-emu --chips N, or
 * a domain of jal-emu processes; docs/multichip.md, "Collectives"; the C++ class is
 * jal::collectives::Communicator in jal/collectives.hpp). Each call enqueues rank `rank`'s
 * part on that rank's queue and returns; every rank must make the same calls in the same
 * order. Buffers are device addresses in the rank's context, counts elements of `dtype`
 * (enum jal_dtype: F32, BF16, F16; the gathers also I32). `done` (may be NULL) completes
 * once when the rank's part is over, with the status of its first failure: LINK_DOWN (a
 * peer unreachable), TIMEOUT (a peer's step did not arrive within the timeout). After a
 * failure the communicator must be destroyed. */
typedef struct jal_comm_s* jal_comm_t;
typedef struct jal_comm_rank {
    jal_device_t device;
    jal_context_t context; /* where the rank's buffers are */
    jal_queue_t queue;     /* where its collectives are enqueued */
} jal_comm_rank_t;
typedef struct jal_comm_options {
    uint32_t struct_size;
    uint32_t reserved;      /* must be zero */
    uint64_t staging_bytes; /* a peer's staging slot (twice); 0: 1 MiB */
    uint64_t timeout_us;    /* a rank's wait for a peer's step; 0: 60 s */
    uint64_t slice_mask;    /* slices of the reduction kernel; 0: the first 8 */
} jal_comm_options_t;
/* Allocates, exports and maps every rank's staging memory (waits for it). */
JAL_API jal_status_t jal_comm_create(const jal_comm_rank_t* ranks, uint32_t count,
                                     const jal_comm_options_t* options, jal_comm_t* out);
/* No collective of it may still be running. */
JAL_API jal_status_t jal_comm_destroy(jal_comm_t comm);
JAL_API jal_status_t jal_comm_size(jal_comm_t comm, uint32_t* size);
/* recv = the sum over ranks of send (count elements each); each element is summed on one
 * rank, in rank order, in F32, and rounded once to dtype. */
JAL_API jal_status_t jal_comm_all_reduce(jal_comm_t comm, uint32_t rank, uint64_t send,
                                         uint64_t recv, uint64_t count, uint32_t dtype,
                                         jal_signal_t done);
/* recv (recv_count) = the sum over ranks of block `rank` of send (size x recv_count). */
JAL_API jal_status_t jal_comm_reduce_scatter(jal_comm_t comm, uint32_t rank, uint64_t send,
                                             uint64_t recv, uint64_t recv_count, uint32_t dtype,
                                             jal_signal_t done);
/* recv (size x send_count) = every rank's send, in rank order. */
JAL_API jal_status_t jal_comm_all_gather(jal_comm_t comm, uint32_t rank, uint64_t send,
                                         uint64_t recv, uint64_t send_count, uint32_t dtype,
                                         jal_signal_t done);
/* Block j of rank r's send (count elements each) becomes block r of rank j's recv. */
JAL_API jal_status_t jal_comm_all_to_all(jal_comm_t comm, uint32_t rank, uint64_t send,
                                         uint64_t recv, uint64_t count, uint32_t dtype,
                                         jal_signal_t done);

#ifdef __cplusplus
}
#endif

#endif
