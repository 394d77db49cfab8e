/* The ioctl test of the system test: bad arguments to every kind of /dev/jal0 ioctl get a
 * clean error (never an oops), then one good path through the raw ABI: a context, a queue
 * whose ring lives in driver DMA memory, its doorbell page mapped, a NOP packet with an
 * interrupt, and the driver's interrupt-driven WAIT_SIGNAL. The privileged commands
 * (DEBUG_FAULT, SET_FEATURE, RESET) are refused to a process without CAP_SYS_ADMIN on the
 * same open file.
 *
 *   jal-system-ioctl [/dev/jal0]    one "ok"/"FAIL" line per check; exit 0 if all pass */
#define _GNU_SOURCE /* setresuid, setresgid */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jal/hw/admin.h>
#include <jal/hw/pci.h>
#include <jal/hw/queue.h>
#include <uapi/jal_accel.h>

#include "system_checks.h"

/* Runs an ioctl and compares the outcome with `want` (0 or an errno). */
static void expect(const char* what, int fd, unsigned long cmd, void* arg, int want)
{
    int ret = ioctl(fd, cmd, arg);
    int got = ret < 0 ? errno : 0;

    if (got == want) {
        printf("ok   %-58s -> %s\n", what, want ? strerror(want) : "0");
    } else {
        printf("FAIL %-58s -> %s, expected %s\n", what, got ? strerror(got) : "0",
               want ? strerror(want) : "0");
        failures++;
    }
}

static void bad_headers(int fd)
{
    struct jal_ioctl_info info;
    struct jal_ioctl_context ctx;
    struct {
        struct jal_ioctl_info info;
        uint64_t extra;
    } bigger;

    INIT(info);
    expect("INFO with a good struct", fd, JAL_IOCTL_INFO, &info, 0);
    expect_true("INFO: ID register reads JALP", info.id == 0x4a414c50);
    INIT(info);
    info.size = 8;
    expect("INFO with size 8 (too small)", fd, JAL_IOCTL_INFO, &info, EINVAL);
    INIT(info);
    info.size = 0;
    expect("INFO with size 0", fd, JAL_IOCTL_INFO, &info, EINVAL);
    memset(&bigger, 0, sizeof(bigger));
    bigger.info.size = sizeof(bigger);
    expect("INFO with a larger struct, zero tail", fd, JAL_IOCTL_INFO, &bigger, 0);
    bigger.info.size = sizeof(bigger);
    bigger.extra = 1;
    expect("INFO with a larger struct, non-zero tail", fd, JAL_IOCTL_INFO, &bigger, E2BIG);
    INIT(info);
    info.size = 1u << 20;
    expect("INFO with size 1 MiB", fd, JAL_IOCTL_INFO, &info, E2BIG);
    INIT(info);
    info.flags = 1;
    expect("INFO with flags 1", fd, JAL_IOCTL_INFO, &info, EINVAL);
    INIT(info);
    info.reserved[6] = 1;
    expect("INFO with reserved[6] set", fd, JAL_IOCTL_INFO, &info, EINVAL);
    INIT(ctx);
    ctx.flags = 0x80000000u;
    expect("CTX_CREATE with an unknown flag", fd, JAL_IOCTL_CTX_CREATE, &ctx, EINVAL);
    INIT(ctx);
    ctx.reserved[2] = 5;
    expect("CTX_CREATE with reserved set", fd, JAL_IOCTL_CTX_CREATE, &ctx, EINVAL);
    expect("INFO with a NULL argument", fd, JAL_IOCTL_INFO, NULL, EFAULT);
    expect("INFO with argument pointer 1", fd, JAL_IOCTL_INFO, (void*)1, EFAULT);
    expect("INFO with a kernel-space pointer", fd, JAL_IOCTL_INFO, (void*)0xffffffff81000000ul,
           EFAULT);
    expect("unknown ioctl number 0x7f", fd, _IOWR(JAL_IOCTL_BASE, 0x7f, struct jal_ioctl_info),
           &info, ENOTTY);
    expect("another driver's ioctl type", fd, _IOWR('T', 0x01, struct jal_ioctl_info), &info,
           ENOTTY);
}

static void bad_handles(int fd)
{
    struct jal_ioctl_context ctx;
    struct jal_ioctl_queue_destroy qd;
    struct jal_ioctl_host_free hf;
    struct jal_ioctl_mem_free mf;
    struct jal_ioctl_bind_irq bi;
    struct jal_ioctl_admin adm;
    struct jal_ioctl_reset rst;

    INIT(ctx);
    ctx.context = 63;
    expect("CTX_DESTROY of a context this file does not own", fd, JAL_IOCTL_CTX_DESTROY, &ctx,
           EPERM);
    INIT(ctx);
    ctx.context = 0xffffffffu;
    expect("CTX_DESTROY of context 0xffffffff", fd, JAL_IOCTL_CTX_DESTROY, &ctx, EPERM);
    INIT(mf);
    mf.context = 7;
    mf.va = JAL_VA_BASE;
    expect("MEM_FREE in a context this file does not own", fd, JAL_IOCTL_MEM_FREE, &mf, EPERM);
    INIT(qd);
    qd.queue = 255;
    expect("QUEUE_DESTROY of a queue this file does not own", fd, JAL_IOCTL_QUEUE_DESTROY, &qd,
           EPERM);
    INIT(qd);
    qd.queue = 100000;
    expect("QUEUE_DESTROY of queue 100000", fd, JAL_IOCTL_QUEUE_DESTROY, &qd, EPERM);
    INIT(hf);
    hf.handle = 9999;
    expect("HOST_FREE of an unknown handle", fd, JAL_IOCTL_HOST_FREE, &hf, EINVAL);
    INIT(bi);
    bi.vector = 1;
    bi.eventfd = 1000;
    expect("BIND_IRQ with a closed descriptor", fd, JAL_IOCTL_BIND_IRQ, &bi, EBADF);
    INIT(bi);
    bi.vector = 1;
    bi.eventfd = 0; /* stdin: not an eventfd */
    expect("BIND_IRQ with a descriptor that is no eventfd", fd, JAL_IOCTL_BIND_IRQ, &bi, EINVAL);
    INIT(bi);
    bi.vector = 0;
    bi.eventfd = -1;
    expect("BIND_IRQ of the admin vector", fd, JAL_IOCTL_BIND_IRQ, &bi, EINVAL);
    INIT(bi);
    bi.vector = JAL_MSIX_VECTORS;
    bi.eventfd = -1;
    expect("BIND_IRQ of vector 16", fd, JAL_IOCTL_BIND_IRQ, &bi, EINVAL);
    INIT(adm);
    adm.opcode = JAL_ADMIN_CREATE_CONTEXT;
    expect("ADMIN CREATE_CONTEXT (has its own ioctl)", fd, JAL_IOCTL_ADMIN, &adm, EINVAL);
    INIT(adm);
    adm.opcode = 0xee;
    expect("ADMIN with an unknown opcode", fd, JAL_IOCTL_ADMIN, &adm, EINVAL);
    INIT(adm);
    adm.opcode = JAL_ADMIN_QUEUE_STATUS;
    adm.cdw[0] = 3;
    expect("ADMIN QUEUE_STATUS of a queue this file does not own", fd, JAL_IOCTL_ADMIN, &adm,
           EPERM);
    INIT(adm);
    adm.opcode = JAL_ADMIN_IDENTIFY;
    adm.data_len = (1u << 20) + 1;
    adm.data_ptr = 0x1000;
    expect("ADMIN IDENTIFY with data_len over 1 MiB", fd, JAL_IOCTL_ADMIN, &adm, EINVAL);
    INIT(rst);
    rst.flags = 2;
    expect("RESET with an unknown flag", fd, JAL_IOCTL_RESET, &rst, EINVAL);
}

static void bad_admin_pointers(int fd)
{
    struct jal_ioctl_admin adm;
    struct jal_identify id;

    INIT(adm);
    adm.opcode = JAL_ADMIN_IDENTIFY;
    adm.data_len = sizeof(struct jal_identify);
    adm.data_ptr = 0x10;
    expect("ADMIN IDENTIFY into address 0x10", fd, JAL_IOCTL_ADMIN, &adm, EFAULT);
    INIT(adm);
    adm.opcode = JAL_ADMIN_IDENTIFY;
    adm.data_len = sizeof(struct jal_identify);
    adm.data_ptr = 0xffff888000000000ull;
    expect("ADMIN IDENTIFY into kernel memory", fd, JAL_IOCTL_ADMIN, &adm, EFAULT);
    INIT(adm);
    adm.opcode = JAL_ADMIN_IDENTIFY;
    adm.data_len = sizeof(id);
    adm.data_ptr = (uintptr_t)&id;
    expect("ADMIN IDENTIFY into a good buffer", fd, JAL_IOCTL_ADMIN, &adm, 0);
    expect_true("ADMIN IDENTIFY: completion status ok", adm.status == 0);

    {
        struct jal_ioctl_identify idf;

        INIT(idf);
        idf.data_ptr = (uintptr_t)&id;
        idf.data_len = sizeof(id);
        expect("IDENTIFY into a good buffer", fd, JAL_IOCTL_IDENTIFY, &idf, 0);
        expect_true("IDENTIFY: status ok, 64 slices", idf.status == 0 && id.slices_total == 64);
        INIT(idf);
        idf.data_ptr = 0x18;
        idf.data_len = sizeof(id);
        expect("IDENTIFY into address 0x18", fd, JAL_IOCTL_IDENTIFY, &idf, EFAULT);
        INIT(idf);
        idf.data_ptr = (uintptr_t)&id;
        idf.data_len = 1u << 16;
        expect("IDENTIFY with data_len 64 KiB", fd, JAL_IOCTL_IDENTIFY, &idf, EINVAL);
    }
}

static void bad_signal_waits(int fd)
{
    struct jal_ioctl_wait_signal ws;

    INIT(ws);
    ws.signal_ptr = 0x1000;
    ws.vector = 1;
    ws.timeout_ns = 1000000;
    expect("WAIT_SIGNAL on an unmapped signal", fd, JAL_IOCTL_WAIT_SIGNAL, &ws, EFAULT);
    INIT(ws);
    ws.signal_ptr = 0x1008;
    ws.vector = 1;
    expect("WAIT_SIGNAL on a misaligned signal", fd, JAL_IOCTL_WAIT_SIGNAL, &ws, EINVAL);
    INIT(ws);
    ws.signal_ptr = 0x1000;
    ws.vector = 1;
    ws.condition = 9;
    expect("WAIT_SIGNAL with condition 9", fd, JAL_IOCTL_WAIT_SIGNAL, &ws, EINVAL);
}

static void bad_pins(int fd)
{
    struct jal_ioctl_host_pin pin;
    struct jal_host_segment segs[4];
    void* page;

    INIT(pin);
    pin.user_ptr = 0x10000;
    pin.bytes = 4096;
    expect("HOST_PIN of unmapped memory", fd, JAL_IOCTL_HOST_PIN, &pin, EFAULT);
    INIT(pin);
    pin.user_ptr = 0x10001;
    pin.bytes = 4096;
    expect("HOST_PIN of a misaligned range", fd, JAL_IOCTL_HOST_PIN, &pin, EINVAL);
    INIT(pin);
    pin.user_ptr = 0xfffffffffffff000ull;
    pin.bytes = 1u << 20;
    expect("HOST_PIN of a range wrapping the address space", fd, JAL_IOCTL_HOST_PIN, &pin, EFAULT);
    page = mmap(NULL, 4 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    INIT(pin);
    pin.user_ptr = (uintptr_t)page;
    pin.bytes = 4 * 4096;
    pin.segments_ptr = 0x20;
    pin.max_segments = 4;
    expect("HOST_PIN with an unmapped segment array", fd, JAL_IOCTL_HOST_PIN, &pin, EFAULT);
    INIT(pin);
    pin.user_ptr = (uintptr_t)page;
    pin.bytes = 4 * 4096;
    pin.segments_ptr = (uintptr_t)segs;
    pin.max_segments = 4;
    expect("HOST_PIN of 4 pages of this process", fd, JAL_IOCTL_HOST_PIN, &pin, 0);
    expect_true("HOST_PIN: 1..4 DMA segments covering 16 KiB",
                pin.nsegments >= 1 && pin.nsegments <= 4 &&
                    segs[0].len + (pin.nsegments > 1 ? segs[1].len : 0) +
                            (pin.nsegments > 2 ? segs[2].len : 0) +
                            (pin.nsegments > 3 ? segs[3].len : 0) ==
                        4 * 4096);
    {
        struct jal_ioctl_host_free hf;

        INIT(hf);
        hf.handle = pin.handle;
        expect("HOST_FREE of the pinned range", fd, JAL_IOCTL_HOST_FREE, &hf, 0);
        expect("HOST_FREE of it again", fd, JAL_IOCTL_HOST_FREE, &hf, EINVAL);
    }
    munmap(page, 4 * 4096);
}

/* Behind the IOMMU (the system test's guest) a DMA buffer may be larger than the 4 MiB the
 * page allocator gives contiguously: 64 MiB, mapped, written at both ends, freed. */
static void large_host_alloc(int fd)
{
    struct jal_ioctl_host_alloc ha;
    struct jal_ioctl_host_free hf;
    const size_t bytes = 64u << 20;
    unsigned char* p;

    INIT(ha);
    ha.bytes = bytes;
    expect("HOST_ALLOC of 64 MiB behind the IOMMU", fd, JAL_IOCTL_HOST_ALLOC, &ha, 0);
    if (ha.handle == 0) return;
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)ha.mmap_offset);
    expect_true("mmap of the 64 MiB buffer", p != MAP_FAILED);
    if (p != MAP_FAILED) {
        p[0] = 1;
        p[bytes - 1] = 2;
        expect_true("the 64 MiB buffer keeps what is written", p[0] == 1 && p[bytes - 1] == 2);
        munmap(p, bytes);
    }
    INIT(hf);
    hf.handle = ha.handle;
    expect("HOST_FREE of the 64 MiB buffer", fd, JAL_IOCTL_HOST_FREE, &hf, 0);
}

static void bad_allocs_and_mappings(int fd)
{
    struct jal_ioctl_host_alloc ha;

    INIT(ha);
    expect("HOST_ALLOC of 0 bytes", fd, JAL_IOCTL_HOST_ALLOC, &ha, EINVAL);
    INIT(ha);
    ha.bytes = 1ull << 40;
    expect("HOST_ALLOC of 1 TiB", fd, JAL_IOCTL_HOST_ALLOC, &ha, EINVAL);
    INIT(ha);
    ha.bytes = (256ull << 20) + 4096;
    expect("HOST_ALLOC of 256 MiB + 4 KiB", fd, JAL_IOCTL_HOST_ALLOC, &ha, EINVAL);
    large_host_alloc(fd);

    expect_true("mmap of an unknown offset fails",
                mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0) == MAP_FAILED && errno == EINVAL);
    expect_true("mmap of another file's doorbell page is refused",
                mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
                     JAL_MMAP_DOORBELL_OFFSET(7)) == MAP_FAILED &&
                    errno == EPERM);
    expect_true("mmap of an unknown host buffer fails",
                mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, JAL_MMAP_HOST_BASE + (77ull << 24)) ==
                    MAP_FAILED);
}

static void bad_pointers(int fd)
{
    bad_admin_pointers(fd);
    bad_signal_waits(fd);
    bad_pins(fd);
    bad_allocs_and_mappings(fd);
}

/* One packet through the raw ABI, completion waited for in the kernel by interrupt. */
static void good_path(int fd)
{
    struct jal_ioctl_context ctx;
    struct jal_ioctl_host_alloc ha;
    struct jal_ioctl_queue_create qc;
    struct jal_ioctl_queue_destroy qd;
    struct jal_ioctl_wait_signal ws;
    struct jal_packet_nop nop;
    unsigned char *mem, *db;
    struct jal_signal* sig;
    uint64_t bus;

    INIT(ctx);
    expect("CTX_CREATE", fd, JAL_IOCTL_CTX_CREATE, &ctx, 0);
    INIT(ha);
    ha.bytes = 8192;
    expect("HOST_ALLOC of 8 KiB", fd, JAL_IOCTL_HOST_ALLOC, &ha, 0);
    mem = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, ha.mmap_offset);
    expect_true("mmap of the host buffer", mem != MAP_FAILED);
    if (mem == MAP_FAILED) return;
    bus = ha.bus_addr;

    INIT(qc);
    qc.context = ctx.context;
    qc.ring_size = 16;
    qc.ring_bus = 0x1000; /* not this file's memory */
    qc.read_index_bus = bus + 4096;
    qc.vector = 1;
    expect("QUEUE_CREATE with a ring outside the file's memory", fd, JAL_IOCTL_QUEUE_CREATE, &qc,
           EINVAL);
    INIT(qc);
    qc.context = ctx.context;
    qc.ring_size = 16;
    qc.ring_bus = bus;
    qc.read_index_bus = bus + 4096;
    qc.vector = 1;
    expect("QUEUE_CREATE with the ring in DMA memory", fd, JAL_IOCTL_QUEUE_CREATE, &qc, 0);
    expect_true("QUEUE_CREATE: device status ok", qc.status == 0);
    db = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, qc.doorbell_offset);
    expect_true("mmap of the queue's doorbell page", db != MAP_FAILED);
    if (db == MAP_FAILED) return;

    sig = (struct jal_signal*)(mem + 4096 + 64);
    __atomic_store_n(&sig->value, 1, __ATOMIC_RELEASE);
    memset(&nop, 0, sizeof(nop));
    nop.completion_signal = bus + 4096 + 64;
    memcpy(mem + 4, (char*)&nop + 4, sizeof(nop) - 4);
    nop.header.type = JAL_PACKET_NOP;
    nop.header.flags = JAL_PACKET_F_INTERRUPT;
    __atomic_store_n((uint32_t*)mem, *(uint32_t*)&nop.header, __ATOMIC_RELEASE);
    __atomic_store_n((uint64_t*)(db + JAL_DOORBELL_WRITE_INDEX), 1, __ATOMIC_RELEASE);

    INIT(ws);
    ws.signal_ptr = (uintptr_t)sig;
    ws.vector = 1;
    ws.condition = JAL_WAIT_EQ;
    ws.compare = 0;
    ws.timeout_ns = 60ull * 1000 * 1000 * 1000;
    expect("WAIT_SIGNAL for the NOP's completion (interrupt)", fd, JAL_IOCTL_WAIT_SIGNAL, &ws, 0);
    expect_true("WAIT_SIGNAL: value 0, packet status ok", ws.value == 0 && ws.signal_status == 0);
    INIT(ws);
    ws.signal_ptr = (uintptr_t)sig;
    ws.vector = 1;
    ws.condition = JAL_WAIT_NE;
    ws.compare = 0;
    ws.timeout_ns = 1000000;
    expect("WAIT_SIGNAL for a value that never comes times out", fd, JAL_IOCTL_WAIT_SIGNAL, &ws,
           ETIMEDOUT);

    INIT(qd);
    qd.queue = qc.queue;
    expect("QUEUE_DESTROY", fd, JAL_IOCTL_QUEUE_DESTROY, &qd, 0);
    expect("QUEUE_DESTROY again", fd, JAL_IOCTL_QUEUE_DESTROY, &qd, EPERM);
    munmap(db, 4096);
    ctx.size = sizeof(ctx); /* keeps ctx.context */
    ctx.leaked = 0;
    ctx.status = 0;
    expect("CTX_DESTROY", fd, JAL_IOCTL_CTX_DESTROY, &ctx, 0);
    munmap(mem, 8192);
    /* the host buffer is left for close() to release */
}

/* The admin ioctl with one opcode and cdw[0..1], expected to end in `want` (0 or an errno). */
static void expect_admin(const char* what, int fd, uint32_t opcode, uint32_t cdw0, uint32_t cdw1,
                         int want)
{
    struct jal_ioctl_admin adm;

    INIT(adm);
    adm.opcode = opcode;
    adm.cdw[0] = cdw0;
    adm.cdw[1] = cdw1;
    expect(what, fd, JAL_IOCTL_ADMIN, &adm, want);
}

/* In a child that dropped root (uid and gid 65534, no capabilities), on the file the root
 * parent opened: the fault injector, features and reset are refused, reads still work.
 * Each refused request is one that would not harm the chip if the check were missing
 * (unknown fault kind and feature), except RESET, whose refusal is the point. */
static void unprivileged_admin(int fd)
{
    pid_t child;
    int status = 0;

    fflush(stdout);
    child = fork();
    if (child == 0) {
        struct jal_ioctl_reset reset;

        if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
            setresuid(65534, 65534, 65534)) {
            perror("dropping root");
            _exit(1);
        }
        expect_admin("unprivileged ADMIN DEBUG_FAULT", fd, JAL_ADMIN_DEBUG_FAULT, 0xffff, 0, EPERM);
        expect_admin("unprivileged ADMIN SET_FEATURE", fd, JAL_ADMIN_SET_FEATURE, 0xffff, 0, EPERM);
        INIT(reset);
        expect("unprivileged RESET", fd, JAL_IOCTL_RESET, &reset, EPERM);
        expect_admin("unprivileged ADMIN GET_FEATURE power limit", fd, JAL_ADMIN_GET_FEATURE,
                     JAL_FEATURE_POWER_LIMIT, 0, 0);
        fflush(stdout);
        _exit(failures > 255 ? 255 : failures);
    }
    expect_true("the unprivileged child ran",
                child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status));
    failures += WIFEXITED(status) ? WEXITSTATUS(status) : 0;
}

int main(int argc, char** argv)
{
    const char* path = argc > 1 ? argv[1] : "/dev/jal0";
    int fd = open(path, O_RDWR | O_CLOEXEC);

    if (fd < 0) {
        perror(path);
        return 1;
    }
    bad_headers(fd);
    bad_handles(fd);
    bad_pointers(fd);
    unprivileged_admin(fd);
    good_path(fd);
    close(fd);
    printf("%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
