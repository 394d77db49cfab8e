/* The DMA isolation test of the system test: copy packets may only reach host memory the
 * driver mapped for this device. A process with /dev/jal0 builds a queue through the raw
 * ABI and submits copy packets that name
 *  - its own HOST_ALLOC buffer and a range it pinned with HOST_PIN (must work; behind an
 *    IOMMU the 128 KiB pinned range must be one bus-contiguous segment),
 *  - the bus address of that pinned range after HOST_FREE unpinned it,
 *  - the guest-physical address of one of its own pages it never gave the driver (found in
 *    /proc/self/pagemap), as destination and as source,
 *  - the guest-physical address of the kernel's code (/proc/iomem, "Kernel code"),
 *  - the HOST_ALLOC buffer, the ring and a signal of another open file of the device (another
 *    process's, as the driver sees it), which is behind the same IOMMU but in another
 *    host space of the device (interface 1.11),
 * and checks that every copy of the second kind fails on the device with DMA_FAULT and that
 * no byte moved: the target page keeps its contents, the device buffer keeps its own.
 * Without an IOMMU between the device and guest memory a bus address is a guest-physical
 * address and these copies succeed (docs/security.md, "Device DMA in a guest").
 * Needs root (physical addresses in pagemap and /proc/iomem).
 *
 *   jal-system-dma [/dev/jal0]    one "ok"/"FAIL" line per check; exit 0 if all pass */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jal/hw/admin.h>
#include <jal/hw/queue.h>
#include <jal/hw/status.h>
#include <uapi/jal_accel.h>

#include "system_checks.h"

#define PAGE 4096u
#define RING_PACKETS 16u
#define CHUNK 256u /* bytes each probe copies */

static void check(int cond, const char* what)
{
    expect_true(what, cond);
}

/* One queue of this process, its ring and signal in a HOST_ALLOC buffer, plus a page of
 * that buffer as the legitimate host side of copies and a device allocation. */
struct dev {
    int fd;
    unsigned char* mem; /* HOST_ALLOC: page 0 ring, page 1 read index + signal, 2-3 data */
    uint64_t bus;
    unsigned char* db;
    uint64_t write_index;
    uint64_t va; /* device memory */
};

#define MEM_PAGES 4u
#define SIGNAL_OFF (PAGE + 64)
#define DATA_OFF (2 * PAGE)

static int setup(struct dev* d, const char* path)
{
    struct jal_ioctl_context ctx;
    struct jal_ioctl_mem_alloc ma;
    struct jal_ioctl_host_alloc ha;
    struct jal_ioctl_queue_create qc;

    memset(d, 0, sizeof(*d));
    d->fd = open(path, O_RDWR | O_CLOEXEC);
    if (d->fd < 0) {
        perror(path);
        return -1;
    }
    INIT(ctx);
    INIT(ma);
    INIT(ha);
    INIT(qc);
    ha.bytes = MEM_PAGES * PAGE;
    if (ioctl(d->fd, JAL_IOCTL_CTX_CREATE, &ctx) || ctx.status ||
        ioctl(d->fd, JAL_IOCTL_HOST_ALLOC, &ha)) {
        perror("CTX_CREATE or HOST_ALLOC");
        return -1;
    }
    ma.context = ctx.context;
    ma.placement = JAL_PLACE_SLICE;
    ma.slice_mask = 1u << 2;
    ma.bytes = 64 * 1024;
    if (ioctl(d->fd, JAL_IOCTL_MEM_ALLOC, &ma) || ma.status) {
        fprintf(stderr, "MEM_ALLOC failed (%s, status %u)\n", strerror(errno), ma.status);
        return -1;
    }
    d->va = ma.va;
    d->mem =
        mmap(NULL, MEM_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, ha.mmap_offset);
    if (d->mem == MAP_FAILED) {
        perror("mmap of the host buffer");
        return -1;
    }
    d->bus = ha.bus_addr;
    qc.context = ctx.context;
    qc.ring_size = RING_PACKETS;
    qc.ring_bus = d->bus;
    qc.read_index_bus = d->bus + PAGE;
    qc.vector = 1;
    if (ioctl(d->fd, JAL_IOCTL_QUEUE_CREATE, &qc) || qc.status) {
        fprintf(stderr, "QUEUE_CREATE failed (%s, status %u)\n", strerror(errno), qc.status);
        return -1;
    }
    d->db = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, d->fd, qc.doorbell_offset);
    if (d->db == MAP_FAILED) {
        perror("mmap of the doorbell page");
        return -1;
    }
    printf("host buffer at bus 0x%" PRIx64 ", device memory at va 0x%" PRIx64 "\n", d->bus, d->va);
    return 0;
}

/* Submits one packet (64 bytes, header first; its completion signal is set here) and
 * waits for it; returns its status (enum jal_status), or -1 when it never completed. */
static int submit(struct dev* d, unsigned char* pkt)
{
    struct jal_signal* sig = (struct jal_signal*)(d->mem + SIGNAL_OFF);
    unsigned char* slot = d->mem + (d->write_index % RING_PACKETS) * JAL_PACKET_SIZE;
    uint64_t completion = d->bus + SIGNAL_OFF;
    struct jal_ioctl_wait_signal ws;

    __atomic_store_n(&sig->status, 0xffffffffu, __ATOMIC_RELAXED);
    __atomic_store_n(&sig->value, 1, __ATOMIC_RELEASE);
    memcpy(pkt + JAL_PACKET_SIGNAL_OFFSET, &completion, sizeof(completion));
    memcpy(slot + 4, pkt + 4, JAL_PACKET_SIZE - 4);
    __atomic_store_n((uint32_t*)slot, *(uint32_t*)pkt, __ATOMIC_RELEASE);
    d->write_index++;
    __atomic_store_n((uint64_t*)(d->db + JAL_DOORBELL_WRITE_INDEX), d->write_index,
                     __ATOMIC_RELEASE);

    INIT(ws);
    ws.signal_ptr = (uintptr_t)sig;
    ws.vector = 1;
    ws.condition = JAL_WAIT_EQ;
    ws.compare = 0;
    ws.timeout_ns = 30ull * 1000 * 1000 * 1000;
    if (ioctl(d->fd, JAL_IOCTL_WAIT_SIGNAL, &ws)) {
        fprintf(stderr, "WAIT_SIGNAL: %s\n", strerror(errno));
        return -1;
    }
    return (int)ws.signal_status;
}

static int copy(struct dev* d, unsigned dir, uint64_t src, uint64_t dst, uint64_t size)
{
    struct jal_packet_copy pkt;

    memset(&pkt, 0, sizeof(pkt));
    pkt.header.type = JAL_PACKET_COPY;
    pkt.header.flags = JAL_PACKET_F_INTERRUPT;
    pkt.header.arg = (uint16_t)dir;
    pkt.src = src;
    pkt.dst = dst;
    pkt.size = size;
    return submit(d, (unsigned char*)&pkt);
}

/* A SIGNAL packet that sets the jal_signal at bus address `target` to `value`. */
static int signal_set(struct dev* d, uint64_t target, int64_t value)
{
    struct jal_packet_signal pkt;

    memset(&pkt, 0, sizeof(pkt));
    pkt.header.type = JAL_PACKET_SIGNAL;
    pkt.header.flags = JAL_PACKET_F_INTERRUPT;
    pkt.header.arg = JAL_SIGNAL_SET;
    pkt.signal = target;
    pkt.operand = value;
    return submit(d, (unsigned char*)&pkt);
}

static const char* status_name(int st)
{
    return st < 0 ? "no completion" : jal_status_name((uint32_t)st);
}

static int all_bytes(const unsigned char* p, unsigned char v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != v) return 0;
    return 1;
}

/* Fills device memory with `v` through the legitimate buffer; true if that worked. */
static int fill_device(struct dev* d, unsigned char v)
{
    memset(d->mem + DATA_OFF, v, CHUNK);
    return copy(d, JAL_COPY_H2D, d->bus + DATA_OFF, d->va, CHUNK) == JAL_STATUS_OK;
}

/* Does device memory still hold `v` (read back through the legitimate buffer)? */
static int device_holds(struct dev* d, unsigned char v)
{
    memset(d->mem + DATA_OFF + PAGE, 0, CHUNK);
    return copy(d, JAL_COPY_D2H, d->va, d->bus + DATA_OFF + PAGE, CHUNK) == JAL_STATUS_OK &&
           all_bytes(d->mem + DATA_OFF + PAGE, v, CHUNK);
}

/* The guest-physical address of a resident page of this process (0 if unknown). */
static uint64_t physical_address(const void* p)
{
    uint64_t entry = 0;
    int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
    off_t off = (off_t)((uintptr_t)p / PAGE * sizeof(entry));

    if (fd < 0) return 0;
    if (pread(fd, &entry, sizeof(entry), off) != (ssize_t)sizeof(entry)) entry = 0;
    close(fd);
    if (!(entry & (1ull << 63))) return 0;      /* not present */
    return (entry & ((1ull << 55) - 1)) * PAGE; /* PFN, 0 without CAP_SYS_ADMIN */
}

/* Start of "Kernel code" in /proc/iomem (0 if not found or hidden). */
static uint64_t kernel_code(void)
{
    char line[256];
    uint64_t start = 0;
    FILE* f = fopen("/proc/iomem", "r");

    if (!f) return 0;
    while (fgets(line, sizeof(line), f))
        if (strstr(line, "Kernel code")) {
            start = strtoull(line + strspn(line, " "), NULL, 16);
            break;
        }
    fclose(f);
    return start;
}

static void legitimate_copies(struct dev* d)
{
    check(fill_device(d, 0x5a), "H2D from the process's HOST_ALLOC buffer works");
    check(device_holds(d, 0x5a), "D2H into the process's HOST_ALLOC buffer works");
}

/* A pinned range: one bus-contiguous segment, reachable while pinned, unreachable once
 * HOST_FREE unpinned it. */
#define PIN_PAGES 32u /* 128 KiB: more than the PCI default DMA segment (64 KiB) */

static void pinned_then_unpinned(struct dev* d)
{
    unsigned char* mem =
        mmap(NULL, PIN_PAGES * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct jal_host_segment segs[PIN_PAGES];
    struct jal_ioctl_host_pin pin;
    struct jal_ioctl_host_free hf;
    char what[160];
    uint64_t bus;
    int st;

    if (mem == MAP_FAILED) {
        check(0, "mmap of a range to pin");
        return;
    }
    for (unsigned i = PIN_PAGES; i-- > 0;) memset(mem + i * PAGE, 0x11, PAGE); /* scattered */
    INIT(pin);
    pin.user_ptr = (uintptr_t)mem;
    pin.bytes = PIN_PAGES * PAGE;
    pin.segments_ptr = (uintptr_t)segs;
    pin.max_segments = PIN_PAGES;
    if (ioctl(d->fd, JAL_IOCTL_HOST_PIN, &pin) || pin.nsegments == 0) {
        check(0, "HOST_PIN of 128 KiB");
        return;
    }
    bus = segs[0].bus_addr;
    printf("pinned 128 KiB: %u DMA segment(s), the first at bus 0x%" PRIx64
           " (its first page at guest-physical 0x%" PRIx64 ")\n",
           pin.nsegments, bus, physical_address(mem));
    check(pin.nsegments == 1 && segs[0].len == PIN_PAGES * PAGE,
          "the pinned range is one bus-contiguous DMA segment");
    if (pin.nsegments == 1) {
        st = copy(d, JAL_COPY_D2H, d->va, bus + PAGE - CHUNK / 2, CHUNK);
        check(st == JAL_STATUS_OK && all_bytes(mem + PAGE - CHUNK / 2, 0x5a, CHUNK) &&
                  all_bytes(mem + PAGE + CHUNK / 2, 0x11, 16),
              "D2H into the pinned range, across a page boundary, works");
    }
    st = copy(d, JAL_COPY_D2H, d->va, bus, CHUNK);
    check(st == JAL_STATUS_OK && all_bytes(mem, 0x5a, CHUNK) && all_bytes(mem + CHUNK, 0x11, 16),
          "D2H into the first pinned page works");

    INIT(hf);
    hf.handle = pin.handle;
    check(ioctl(d->fd, JAL_IOCTL_HOST_FREE, &hf) == 0, "HOST_FREE unpins it");
    memset(mem, 0x22, PAGE);
    st = copy(d, JAL_COPY_D2H, d->va, bus, CHUNK);
    snprintf(what, sizeof(what),
             "D2H to the unpinned page's old bus address 0x%" PRIx64
             " fails with a DMA fault (got: %s)",
             bus, status_name(st));
    check(st == JAL_STATUS_DMA_FAULT, what);
    check(all_bytes(mem, 0x22, PAGE), "the unpinned page was not written");
    munmap(mem, PIN_PAGES * PAGE);
}

/* A page of this process the driver never saw, named by its guest-physical address. */
static void never_pinned(struct dev* d)
{
    unsigned char* page =
        mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char what[160];
    uint64_t gpa;
    int st;

    if (page == MAP_FAILED || mlock(page, PAGE)) {
        check(0, "mmap and mlock of a page never given to the driver");
        return;
    }
    memset(page, 0x33, PAGE);
    gpa = physical_address(page);
    if (!gpa) {
        check(0, "guest-physical address of the page from /proc/self/pagemap (root needed)");
        return;
    }
    st = copy(d, JAL_COPY_D2H, d->va, gpa, CHUNK);
    snprintf(what, sizeof(what),
             "D2H to guest-physical 0x%" PRIx64
             " (a page never pinned) fails with a DMA fault (got: %s)",
             gpa, status_name(st));
    check(st == JAL_STATUS_DMA_FAULT, what);
    check(all_bytes(page, 0x33, PAGE), "that page was not written");

    memset(page, 0x33, PAGE); /* in case the device did write it */
    check(fill_device(d, 0x5a), "device memory refilled");
    st = copy(d, JAL_COPY_H2D, gpa, d->va, CHUNK);
    snprintf(what, sizeof(what),
             "H2D from guest-physical 0x%" PRIx64
             " (a page never pinned) fails with a DMA fault (got: %s)",
             gpa, status_name(st));
    check(st == JAL_STATUS_DMA_FAULT, what);
    check(device_holds(d, 0x5a), "device memory did not receive that page's bytes");
    munlock(page, PAGE);
    munmap(page, PAGE);
}

/* The kernel's code, read only (a write there would take the guest down on a device that
 * can reach it). */
static void kernel_memory(struct dev* d)
{
    uint64_t gpa = kernel_code();
    char what[160];
    int st;

    if (!gpa) {
        check(0, "\"Kernel code\" in /proc/iomem (root needed)");
        return;
    }
    check(fill_device(d, 0x5a), "device memory refilled");
    st = copy(d, JAL_COPY_H2D, gpa, d->va, CHUNK);
    snprintf(what, sizeof(what),
             "H2D from the kernel's code at guest-physical 0x%" PRIx64
             " fails with a DMA fault (got: %s)",
             gpa, status_name(st));
    check(st == JAL_STATUS_DMA_FAULT, what);
    check(device_holds(d, 0x5a), "device memory did not receive kernel bytes");
}

/* Another file's buffer and ring, named by their bus addresses (which are not secret: the
 * IOVAs are allocated top-down): mapped for the device, but not in this file's windows. */
static void another_files_memory(struct dev* d, const char* path)
{
    struct dev e;
    struct jal_signal* other_sig;
    char what[200];
    int st;

    if (setup(&e, path)) {
        check(0, "a second open file with its own queue");
        return;
    }
    other_sig = (struct jal_signal*)(e.mem + SIGNAL_OFF);
    memset(e.mem + DATA_OFF, 0x44, CHUNK);
    check(copy(&e, JAL_COPY_D2H, e.va, e.bus + DATA_OFF + PAGE, CHUNK) == JAL_STATUS_OK,
          "the other file's own copy into its buffer works");

    st = copy(d, JAL_COPY_D2H, d->va, e.bus + DATA_OFF, CHUNK);
    snprintf(what, sizeof(what),
             "D2H into another file's HOST_ALLOC buffer (bus 0x%" PRIx64
             ") fails with a DMA fault (got: %s)",
             e.bus + DATA_OFF, status_name(st));
    check(st == JAL_STATUS_DMA_FAULT, what);
    check(all_bytes(e.mem + DATA_OFF, 0x44, CHUNK), "the other file's buffer was not written");

    check(fill_device(d, 0x5a), "device memory refilled");
    memset(e.mem + DATA_OFF, 0x44, CHUNK); /* in case the device did write it */
    st = copy(d, JAL_COPY_H2D, e.bus + DATA_OFF, d->va, CHUNK);
    snprintf(what, sizeof(what),
             "H2D from another file's HOST_ALLOC buffer fails with a DMA fault (got: %s)",
             status_name(st));
    check(st == JAL_STATUS_DMA_FAULT, what);
    check(device_holds(d, 0x5a), "device memory did not receive the other file's bytes");

    st = copy(d, JAL_COPY_D2H, d->va, e.bus, CHUNK);
    snprintf(what, sizeof(what),
             "D2H over another file's queue ring fails with a DMA fault (got: %s)",
             status_name(st));
    check(st == JAL_STATUS_DMA_FAULT, what);
    __atomic_store_n(&other_sig->value, 77, __ATOMIC_RELEASE);
    st = signal_set(d, e.bus + SIGNAL_OFF, 0);
    snprintf(what, sizeof(what),
             "a SIGNAL packet setting another file's signal fails with a DMA fault (got: %s)",
             status_name(st));
    check(st == JAL_STATUS_DMA_FAULT, what);
    check(__atomic_load_n(&other_sig->value, __ATOMIC_ACQUIRE) == 77,
          "the other file's signal kept its value");
    check(signal_set(d, d->bus + SIGNAL_OFF + 16, 5) == JAL_STATUS_OK,
          "a SIGNAL packet setting this file's own signal works");
    check(copy(&e, JAL_COPY_D2H, e.va, e.bus + DATA_OFF + PAGE, CHUNK) == JAL_STATUS_OK,
          "the other file's queue still runs");
    close(e.fd);
}

int main(int argc, char** argv)
{
    const char* path = argc > 1 ? argv[1] : "/dev/jal0";
    struct dev d;

    if (setup(&d, path)) return 1;
    legitimate_copies(&d);
    pinned_then_unpinned(&d);
    never_pinned(&d);
    kernel_memory(&d);
    another_files_memory(&d, path);
    legitimate_copies(&d); /* the queue still works after the faults */
    close(d.fd);
    printf("%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
