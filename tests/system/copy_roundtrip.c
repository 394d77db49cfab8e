/* The userlib copy test of the system test: random bytes host -> device -> host through a
 * user queue, checked byte for byte, each round's completion waited for by interrupt
 * (JAL_WAIT_INTERRUPT: the thread sleeps on the queue's MSI-X eventfd). The same program
 * runs against jal-emu directly and, in the guest, through jal.ko.
 *
 *   jal-system-copy [seed]      prints one "copy ..." line per round; exit 0 if all match */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

static uint64_t next_random(uint64_t* state)
{
    /* xorshift64*: reproducible from the printed seed */
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return *state * 0x2545f4914f6cdd1dull;
}

/* One round: `size` bytes from host offset `src_off` to device memory and back to host
 * offset `dst_off`, both copies completing one signal that the waiter sleeps on. */
static int round_trip(jal_queue_t queue, jal_device_t dev, uint64_t va, unsigned char* host,
                      uint64_t bus, uint64_t src_off, uint64_t dst_off, uint64_t size,
                      uint64_t* rng)
{
    jal_signal_t done;
    uint32_t packet_status = 0;
    int64_t value = -1;

    for (uint64_t i = 0; i < size; i++) host[src_off + i] = (unsigned char)next_random(rng);
    memset(host + dst_off, 0, size);

    CHECK(jal_signal_create(dev, 2, JAL_SIGNAL_INTERRUPT, &done));
    CHECK(jal_queue_copy(queue, JAL_COPY_H2D, va, bus + src_off, size, done));
    CHECK(jal_queue_copy(queue, JAL_COPY_D2H, bus + dst_off, va, size, done));
    CHECK(jal_signal_wait(done, JAL_SIGNAL_EQ, 0, 60ull * 1000 * 1000 * 1000, JAL_WAIT_INTERRUPT,
                          &value, &packet_status));
    CHECK(jal_signal_destroy(done));
    if (packet_status != JAL_STATUS_OK) {
        fprintf(stderr, "copy of %" PRIu64 " bytes failed on the device: %s\n", size,
                jal_status_string(packet_status));
        return 1;
    }
    for (uint64_t i = 0; i < size; i++) {
        if (host[src_off + i] != host[dst_off + i]) {
            fprintf(stderr, "copy of %" PRIu64 " bytes: byte %" PRIu64 " is 0x%02x, sent 0x%02x\n",
                    size, i, host[dst_off + i], host[src_off + i]);
            return 1;
        }
    }
    printf("copy %" PRIu64 " bytes host+0x%" PRIx64 " -> va 0x%" PRIx64 " -> host+0x%" PRIx64
           ": identical (waited by interrupt)\n",
           size, src_off, va, dst_off);
    return 0;
}

int main(int argc, char** argv)
{
    const uint64_t half = 1 << 20;
    uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 0) : (uint64_t)time(NULL);
    uint64_t rng = seed ? seed : 1;
    jal_device_t dev;
    jal_context_t ctx;
    jal_mem_t mem;
    jal_queue_t queue;
    jal_host_buffer_t host;
    void* ptr;
    uint64_t bus;

    printf("seed %" PRIu64 "\n", seed);
    CHECK(jal_device_open(0, NULL, &dev));
    CHECK(jal_context_create(dev, &ctx));
    CHECK(jal_mem_alloc(ctx, half, JAL_PLACE_SLICE, 1u << 2, 0, &mem));
    jal_mem_info_t info = {.struct_size = sizeof info};
    CHECK(jal_mem_get_info(mem, &info));
    CHECK(jal_queue_create(ctx, 256, 0, &queue));
    CHECK(jal_host_alloc(dev, 2 * half, &host));
    CHECK(jal_host_buffer_info(host, &ptr, &bus, NULL));

    /* A whole MiB, a page, and an odd length at odd offsets. */
    if (round_trip(queue, dev, info.va, ptr, bus, 0, half, half, &rng) ||
        round_trip(queue, dev, info.va, ptr, bus, 4096, half + 8192, 4096, &rng) ||
        round_trip(queue, dev, info.va, ptr, bus, 13, half + 7, 100003, &rng))
        return 1;

    CHECK(jal_host_free(host));
    CHECK(jal_queue_destroy(queue));
    CHECK(jal_mem_free(mem));
    uint32_t leaked;
    CHECK(jal_context_destroy(ctx, &leaked));
    CHECK(jal_device_close(dev));
    if (leaked) {
        fprintf(stderr, "context destroy reported %u leaked resources\n", leaked);
        return 1;
    }
    printf("copy round trips ok\n");
    return 0;
}
