/* Device loss through the kernel driver (system test): a client with a context, a queue and
 * a wait that only a reset can end. It creates READY_FILE once all that is in place, then
 * waits (by interrupt, no timeout); the guest script resets the chip under it with jalctl.
 * The wait must end with JAL_STATUS_DEVICE_RESET, later calls on the old handles fail with
 * it, and a re-opened device copies data to the chip and back.
 *
 *   jal-system-reset READY_FILE      exit 0 if all of that held */
#include <stdio.h>
#include <string.h>

#include <jal/jal.h>

#define CHECK(call)                                                        \
    do {                                                                   \
        jal_status_t st_ = (call);                                         \
        if (st_ != JAL_STATUS_OK) {                                        \
            fprintf(stderr, "%s: %s: %s\n", #call, jal_status_string(st_), \
                    jal_last_error_message());                             \
            return 1;                                                      \
        }                                                                  \
    } while (0)

#define EXPECT_RESET(call)                                                                   \
    do {                                                                                     \
        jal_status_t st_ = (call);                                                           \
        if (st_ != JAL_STATUS_DEVICE_RESET) {                                                \
            fprintf(stderr, "%s on a reset device: %s (%s), expected device reset\n", #call, \
                    jal_status_string(st_), jal_last_error_message());                       \
            return 1;                                                                        \
        }                                                                                    \
        printf("%s: %s\n", #call, jal_last_error_message());                                 \
    } while (0)

/* A copy to the device and back on a freshly opened device. */
static int copy_after_reopen(void)
{
    jal_device_t dev;
    jal_context_t ctx;
    jal_mem_t mem;
    jal_queue_t queue;
    jal_host_buffer_t host;
    jal_signal_t done;
    unsigned char* ptr;
    uint64_t bus;
    uint32_t packet_status = 0;

    CHECK(jal_device_open(0, NULL, &dev));
    CHECK(jal_context_create(dev, &ctx));
    CHECK(jal_mem_alloc(ctx, 1 << 20, JAL_PLACE_SLICE, 1, 0, &mem));
    jal_mem_info_t info = {.struct_size = sizeof info};
    CHECK(jal_mem_get_info(mem, &info));
    CHECK(jal_queue_create(ctx, 64, 0, &queue));
    CHECK(jal_host_alloc(dev, 8192, &host));
    CHECK(jal_host_buffer_info(host, (void**)&ptr, &bus, NULL));
    for (int i = 0; i < 4096; i++) ptr[i] = (unsigned char)(i * 7 + 3);
    CHECK(jal_signal_create(dev, 2, JAL_SIGNAL_INTERRUPT, &done));
    CHECK(jal_queue_copy(queue, JAL_COPY_H2D, info.va, bus, 4096, done));
    CHECK(jal_queue_copy(queue, JAL_COPY_D2H, bus + 4096, info.va, 4096, done));
    CHECK(jal_signal_wait(done, JAL_SIGNAL_EQ, 0, JAL_TIMEOUT_INFINITE, JAL_WAIT_INTERRUPT, NULL,
                          &packet_status));
    if (packet_status != JAL_STATUS_OK || memcmp(ptr, ptr + 4096, 4096) != 0) {
        fprintf(stderr, "copy after re-opening: %s, data %s\n", jal_status_string(packet_status),
                memcmp(ptr, ptr + 4096, 4096) ? "differs" : "identical");
        return 1;
    }
    printf("re-opened device: copy round trip identical\n");
    CHECK(jal_signal_destroy(done));
    CHECK(jal_host_free(host));
    CHECK(jal_queue_destroy(queue));
    CHECK(jal_mem_free(mem));
    CHECK(jal_context_destroy(ctx, NULL));
    return jal_device_close(dev) == JAL_STATUS_OK ? 0 : 1;
}

int main(int argc, char** argv)
{
    jal_device_t dev;
    jal_context_t ctx;
    jal_queue_t queue;
    jal_signal_t gate, done;
    jal_mem_t mem = NULL;

    if (argc != 2) {
        fprintf(stderr, "usage: jal-system-reset READY_FILE\n");
        return 2;
    }
    CHECK(jal_device_open(0, NULL, &dev));
    CHECK(jal_context_create(dev, &ctx));
    CHECK(jal_queue_create(ctx, 64, 0, &queue));
    CHECK(jal_signal_create(dev, 1, 0, &gate));
    CHECK(jal_signal_create(dev, 1, JAL_SIGNAL_INTERRUPT, &done));
    CHECK(jal_queue_barrier_and(queue, &gate, 1, done)); /* nothing ever opens the gate */
    FILE* ready = fopen(argv[1], "w");
    if (!ready || fclose(ready) != 0) {
        perror(argv[1]);
        return 1;
    }
    printf("waiting with a live context for a reset\n");
    fflush(stdout);

    EXPECT_RESET(jal_signal_wait(done, JAL_SIGNAL_EQ, 0, JAL_TIMEOUT_INFINITE, JAL_WAIT_INTERRUPT,
                                 NULL, NULL));
    EXPECT_RESET(jal_queue_nop(queue, NULL));
    EXPECT_RESET(jal_mem_alloc(ctx, 1 << 20, JAL_PLACE_SLICE, 1, 0, &mem));
    struct jal_identify id;
    EXPECT_RESET(jal_device_identify(dev, &id));
    CHECK(jal_signal_destroy(done));
    CHECK(jal_signal_destroy(gate));
    CHECK(jal_queue_destroy(queue));
    CHECK(jal_context_destroy(ctx, NULL));
    CHECK(jal_device_close(dev));
    return copy_after_reopen();
}
