/* The C API of API 1.3 to 1.5 from a C program (compiled as C11: jal.h is C): memory info,
 * telemetry, a kernel assembled from text, uploaded and dispatched with a timestamped
 * signal, the profiler callback, the assembler's error position, the disassembler as its
 * inverse (the listing assembles back to the same bytes), value packets and a
 * communicator. Run against a jal-emu
 * by c_program_test.cpp; prints "c api ok" and exits 0 when everything checked out. */
#include <stdatomic.h>
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
#define EXPECT(cond)                                                           \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond); \
            return 1;                                                          \
        }                                                                      \
    } while (0)

static const char kSource[] = "kernel c_fill\n"
                              "arg address out\n"
                              "arg u64 n\n"
                              "    movsr x1, args\n"
                              "    ld x2, [x1]        ; out\n"
                              "    ld x3, [x1+8]      ; n\n"
                              "    movsr x4, slice\n"
                              "    mul x5, x4, x3     ; slice * n\n"
                              "    muli x4, x4, 8\n"
                              "    add x4, x2, x4\n"
                              "    st x5, [x4]        ; out[slice]\n"
                              "    end\n";

static atomic_int profiled;
static atomic_ulong profiled_ns;

static void on_dispatch(const jal_dispatch_profile_t* d, void* user)
{
    (void)user;
    atomic_store(&profiled_ns, (unsigned long)(d->end_ns - d->start_ns));
    atomic_fetch_add(&profiled, 1);
}

/* API 1.5 from C: value packets (a wait that is met, one that times out and a chained
 * packet that passes the timeout on) and a communicator of one rank, whose all-reduce is
 * its input. `area` is 64 KiB of device memory, `h`/`bus` the host buffer. */
static int check_values_and_comm(jal_device_t dev, jal_context_t ctx, jal_queue_t queue,
                                 uint64_t area, unsigned char* h, uint64_t bus)
{
    jal_signal_t met, late, chained;
    CHECK(jal_signal_create(dev, 1, 0, &met));
    CHECK(jal_signal_create(dev, 1, 0, &late));
    CHECK(jal_signal_create(dev, 1, 0, &chained));
    CHECK(jal_queue_write_value(queue, area, 42, 0, NULL));
    CHECK(jal_queue_wait_value(queue, area, JAL_VALUE_GE, 42, 0, 0, met));
    CHECK(jal_queue_wait_value(queue, area, JAL_VALUE_EQ, 43, 1000, 0, late));
    CHECK(jal_queue_write_value(queue, area, 7, JAL_PACKET_F_CHAIN, chained));
    uint32_t st[3];
    jal_signal_t sig[3] = {met, late, chained};
    for (int i = 0; i < 3; i++) {
        CHECK(
            jal_signal_wait(sig[i], JAL_SIGNAL_EQ, 0, 30000000000ull, JAL_WAIT_POLL, NULL, &st[i]));
        CHECK(jal_signal_destroy(sig[i]));
    }
    EXPECT(st[0] == JAL_STATUS_OK && st[1] == JAL_STATUS_TIMEOUT && st[2] == JAL_STATUS_TIMEOUT);

    jal_comm_rank_t rank = {dev, ctx, queue};
    jal_comm_t comm;
    CHECK(jal_comm_create(&rank, 1, NULL, &comm));
    float in[16];
    for (int i = 0; i < 16; i++) in[i] = 0.25f * (float)i - 1.0f;
    memcpy(h, in, sizeof in);
    jal_signal_t done;
    CHECK(jal_signal_create(dev, 2, 0, &done));
    CHECK(jal_queue_copy(queue, JAL_COPY_H2D, area + 4096, bus, sizeof in, done));
    CHECK(jal_comm_all_reduce(comm, 0, area + 4096, area + 8192, 16, JAL_DT_F32, done));
    CHECK(jal_signal_wait(done, JAL_SIGNAL_EQ, 0, 30000000000ull, JAL_WAIT_POLL, NULL, &st[0]));
    EXPECT(st[0] == JAL_STATUS_OK);
    memset(h, 0, sizeof in);
    CHECK(jal_signal_store(done, 1));
    CHECK(jal_queue_copy(queue, JAL_COPY_D2H, bus, area + 8192, sizeof in, done));
    CHECK(jal_signal_wait(done, JAL_SIGNAL_EQ, 0, 30000000000ull, JAL_WAIT_POLL, NULL, NULL));
    EXPECT(memcmp(h, in, sizeof in) == 0);
    CHECK(jal_signal_destroy(done));
    CHECK(jal_comm_destroy(comm));
    return 0;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int check_assembler_errors(void)
{
    jal_kernel_t k = NULL;
    jal_asm_error_t err = {.struct_size = sizeof err};
    EXPECT(jal_kernel_assemble("kernel bad\n  add x1, x2, t3\n", &k, &err) ==
           JAL_STATUS_INVALID_FIELD);
    EXPECT(k == NULL && err.line == 2 && err.column == 15);
    EXPECT(strstr(err.message, "scalar register") != NULL);
    EXPECT(strncmp(jal_last_error_message(), "2:15: ", 6) == 0);
    return 0;
}

/* jal-objdump's listing from C: measured with capacity 0, cut short (still NUL-terminated)
 * when the buffer is small, and assembled back to the same code object. */
static int check_disassembly(const void* code, uint64_t code_size)
{
    uint64_t length = 0;
    CHECK(jal_kernel_disassemble(code, code_size, NULL, 0, &length));
    EXPECT(length > 0);
    char small[8];
    uint64_t again = 0;
    CHECK(jal_kernel_disassemble(code, code_size, small, sizeof small, &again));
    EXPECT(again == length && strlen(small) == sizeof small - 1);
    char* text = malloc(length + 1);
    EXPECT(text != NULL);
    CHECK(jal_kernel_disassemble(code, code_size, text, length + 1, NULL));
    const int named =
        strlen(text) == length && strstr(text, "c_fill") != NULL && strstr(text, "muli") != NULL;
    jal_kernel_t back = NULL;
    const jal_status_t st = jal_kernel_assemble(text, &back, NULL);
    free(text);
    EXPECT(named);
    CHECK(st);
    const void* back_code;
    uint64_t back_size;
    CHECK(jal_kernel_code_object(back, &back_code, &back_size));
    const int same = back_size == code_size && memcmp(back_code, code, code_size) == 0;
    CHECK(jal_kernel_destroy(back));
    EXPECT(same);
    return 0;
}

static int check_device_info(jal_device_t dev)
{
    jal_device_memory_info_t mem = {.struct_size = sizeof mem};
    CHECK(jal_device_memory_info(dev, &mem));
    EXPECT(mem.total_bytes > 0 && mem.used_bytes + mem.free_bytes == mem.total_bytes);
    EXPECT(mem.slices > 0 && mem.slice_pages_total[0] > 0);
    struct jal_telemetry t = {.struct_size = sizeof t};
    CHECK(jal_device_telemetry(dev, &t));
    EXPECT(t.struct_size == sizeof t && t.clock_mhz > 0 && t.power_mw > 0);
    return 0;
}

int main(void)
{
    if (check_assembler_errors()) return 1;
    jal_kernel_t kernel;
    CHECK(jal_kernel_assemble(kSource, &kernel, NULL));
    jal_kernel_info_t info = {.struct_size = sizeof info};
    CHECK(jal_kernel_get_info(kernel, &info));
    EXPECT(strcmp(info.name, "c_fill") == 0 && info.args_size == 16 && info.instructions == 9);
    const void* code;
    uint64_t code_size;
    CHECK(jal_kernel_code_object(kernel, &code, &code_size));
    if (check_disassembly(code, code_size)) return 1;

    jal_device_t dev;
    jal_context_t ctx;
    jal_queue_t queue;
    jal_mem_t mem;
    jal_host_buffer_t host;
    CHECK(jal_device_open(0, NULL, &dev));
    if (check_device_info(dev)) return 1;
    CHECK(jal_context_create(dev, &ctx));
    CHECK(jal_queue_create(ctx, 64, 0, &queue));
    CHECK(jal_mem_alloc(ctx, 3 << 20, JAL_PLACE_SLICE, 1, 0, &mem)); /* code, args, out */
    jal_mem_info_t mi = {.struct_size = sizeof mi};
    CHECK(jal_mem_get_info(mem, &mi));
    const uint64_t code_va = mi.va, args_va = mi.va + (1 << 20), out_va = mi.va + (2 << 20);
    CHECK(jal_host_alloc(dev, 1 << 20, &host));
    unsigned char* h;
    uint64_t bus;
    CHECK(jal_host_buffer_info(host, (void**)&h, &bus, NULL));

    /* Upload the code object and the arguments {out, n = 5}. */
    memcpy(h, code, code_size);
    const uint64_t args[2] = {out_va, 5};
    memcpy(h + 65536, args, sizeof args);
    jal_signal_t copied, done;
    CHECK(jal_signal_create(dev, 2, 0, &copied));
    CHECK(jal_queue_copy(queue, JAL_COPY_H2D, code_va, bus, code_size, copied));
    CHECK(jal_queue_copy(queue, JAL_COPY_H2D, args_va, bus + 65536, sizeof args, copied));
    CHECK(jal_signal_wait(copied, JAL_SIGNAL_EQ, 0, 30000000000ull, JAL_WAIT_POLL, NULL, NULL));

    /* Four slices, a timestamped completion, the profiler watching. */
    CHECK(jal_device_set_profiler(dev, on_dispatch, NULL));
    CHECK(jal_signal_create(dev, 1, JAL_SIGNAL_TIMESTAMPS | JAL_SIGNAL_INTERRUPT, &done));
    jal_dispatch_desc_t desc = {
        .size = sizeof desc, .code_object = code_va, .slice_mask = 0xf, .args = args_va};
    CHECK(jal_queue_dispatch(queue, &desc, done));
    uint32_t packet_status;
    CHECK(jal_signal_wait(done, JAL_SIGNAL_EQ, 0, 30000000000ull, JAL_WAIT_HYBRID, NULL,
                          &packet_status));
    EXPECT(packet_status == JAL_STATUS_OK);
    jal_signal_times_t times = {.struct_size = sizeof times};
    CHECK(jal_signal_get_times(done, &times));
    uint64_t elapsed;
    CHECK(jal_signal_elapsed_ns(done, done, &elapsed));
    EXPECT(times.slices == 4 && times.end_ns > times.start_ns);
    EXPECT(elapsed == times.end_ns - times.start_ns);
    for (double until = now_s() + 30; atomic_load(&profiled) == 0 && now_s() < until;)
        ;
    CHECK(jal_device_set_profiler(dev, NULL, NULL));
    EXPECT(atomic_load(&profiled) == 1 && atomic_load(&profiled_ns) == elapsed);

    /* The kernel's results: out[slice] = slice * 5. */
    CHECK(jal_signal_store(copied, 1));
    CHECK(jal_queue_copy(queue, JAL_COPY_D2H, bus, out_va, 32, copied));
    CHECK(jal_signal_wait(copied, JAL_SIGNAL_EQ, 0, 30000000000ull, JAL_WAIT_POLL, NULL, NULL));
    uint64_t out[4];
    memcpy(out, h, sizeof out);
    for (int i = 0; i < 4; i++) EXPECT(out[i] == (uint64_t)i * 5);

    if (check_values_and_comm(dev, ctx, queue, out_va + 65536, h, bus)) return 1;

    CHECK(jal_signal_destroy(done));
    CHECK(jal_signal_destroy(copied));
    CHECK(jal_host_free(host));
    CHECK(jal_queue_destroy(queue));
    CHECK(jal_mem_free(mem));
    CHECK(jal_context_destroy(ctx, NULL));
    CHECK(jal_device_close(dev));
    CHECK(jal_kernel_destroy(kernel));
    printf("c api ok: %.0f ns on the device clock\n", (double)elapsed);
    return 0;
}
