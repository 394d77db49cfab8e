/* Hangs the firmware's main loop (admin DEBUG_FAULT, privileged) through jal.ko, so that the
 * system test sees the chip's watchdog reset it and the driver set it up again. The hang
 * command itself never completes: its ioctl returns once the driver sees the reset
 * (ECONNRESET) or its admin timeout passes.
 *
 * Before the hang this file makes a context and a queue and maps the queue's doorbell page;
 * after it, once an IDENTIFY has made the driver notice the reset (and take the page away;
 * an IDENTIFY sent while the firmware hung is lost with ECONNRESET and sent again),
 * it writes the old doorbell as a client that has not yet learned of the reset would: that
 * must land on the driver's dummy page, not kill the process with SIGBUS.
 *
 *   jal-system-hang /dev/jal0      exit 0 when all of that held */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <jal/hw/admin.h>
#include <jal/hw/queue.h>
#include <uapi/jal_accel.h>

#include "system_checks.h"

/* A context, 8 KiB of DMA memory for the ring, a queue and its mapped doorbell page. */
static volatile uint64_t* queue_doorbell(int fd)
{
    struct jal_ioctl_context ctx;
    struct jal_ioctl_host_alloc ha;
    struct jal_ioctl_queue_create qc;
    void* db;

    INIT(ctx);
    INIT(ha);
    ha.bytes = 8192;
    expect_true("a context and 8 KiB of DMA memory",
                !ioctl(fd, JAL_IOCTL_CTX_CREATE, &ctx) && !ioctl(fd, JAL_IOCTL_HOST_ALLOC, &ha));
    INIT(qc);
    qc.context = ctx.context;
    qc.ring_size = 16;
    qc.ring_bus = ha.bus_addr;
    qc.read_index_bus = ha.bus_addr + 4096;
    qc.vector = 1;
    expect_true("a queue", !failures && !ioctl(fd, JAL_IOCTL_QUEUE_CREATE, &qc) && !qc.status);
    db = failures
             ? MAP_FAILED
             : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)qc.doorbell_offset);
    expect_true("its doorbell page mapped", db != MAP_FAILED);
    if (db == MAP_FAILED) return NULL;
    return (volatile uint64_t*)((char*)db + JAL_DOORBELL_WRITE_INDEX);
}

int main(int argc, char** argv)
{
    struct jal_ioctl_admin a;
    struct jal_ioctl_identify id;
    volatile uint64_t* doorbell;
    int fd, ret;

    if (argc != 2) {
        fprintf(stderr, "usage: jal-system-hang /dev/jalN\n");
        return 1;
    }
    fd = open(argv[1], O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
        return 1;
    }
    doorbell = queue_doorbell(fd);
    if (!doorbell) return 1;

    INIT(a);
    a.opcode = JAL_ADMIN_DEBUG_FAULT;
    a.cdw[0] = JAL_DEBUG_FAULT_HANG_MAIN_LOOP;
    ret = ioctl(fd, JAL_IOCTL_ADMIN, &a);
    printf("DEBUG_FAULT hang: ioctl returned %d (%s)\n", ret, ret < 0 ? strerror(errno) : "ok");

    /* A command the hung firmware took but never completed is lost with the reset
     * (ECONNRESET); the next one finds the new generation and sets the chip up again. */
    for (int attempt = 0; attempt < 3; attempt++) {
        INIT(id);
        ret = ioctl(fd, JAL_IOCTL_IDENTIFY, &id);
        printf("IDENTIFY after the reset: %d (%s)\n", ret, ret < 0 ? strerror(errno) : "ok");
        if (ret == 0 || errno != ECONNRESET) break;
    }
    expect_true("IDENTIFY sets the chip up again after the reset", ret == 0);
    if (ret < 0) return 1;
    *doorbell = 1; /* SIGBUS here without the dummy page */
    printf("ok   a stale doorbell write after the reset: no fault (it would end here by SIGBUS)\n");
    close(fd);
    return failures ? 1 : 0;
}
