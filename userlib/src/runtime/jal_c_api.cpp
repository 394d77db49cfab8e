// The C API (jal.h): handles wrap the runtime objects; every entry point converts
// exceptions into a status and the thread's last error message.
#include <jal/jal.h>

#include <cstdio>
#include <cstring>
#include <new>
#include <string>

#include <jal/chip_function.hpp>
#include <jal/error.hpp>

#include "c_api_support.hpp"
#include "file_loader.hpp"
#include "runtime_objects.hpp"

namespace jal::runtime::capi {

std::string& last_error()
{
    thread_local std::string message;
    return message;
}

}  // namespace jal::runtime::capi

using namespace jal::runtime::capi;

namespace {

// Why jal_device_open gave up: a failed chip fails at once (say so, and how long it took);
// only a chip still on its way up has used up the whole wait.
jal::Error not_ready_error(uint32_t index, const jal::DeviceStatus& s,
                           std::chrono::steady_clock::time_point start,
                           std::chrono::milliseconds budget)
{
    auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                    std::chrono::steady_clock::now() - start)
                    .count();
    std::string where = "device " + std::to_string(index) + ": ";
    if (s.state == jal::DeviceState::failed) {
        char post[16];
        std::snprintf(post, sizeof post, "0x%x", s.post_code);
        return jal::Error(JAL_STATUS_HW_FAILED,
                          where + "the chip failed (fault: " + jal_status_name(s.fault) +
                              ", POST code " + post + "); found after " + std::to_string(took) +
                              " ms");
    }
    return jal::Error(JAL_STATUS_NOT_READY, where + "still " + jal::state_name(s.state) +
                                                " after waiting " + std::to_string(took) +
                                                " ms (ready_timeout_ms " +
                                                std::to_string(budget.count()) + ")");
}

}  // namespace

extern "C" {

const char* jal_last_error_message(void)
{
    return jal::runtime::capi::last_error().c_str();
}

const char* jal_status_string(jal_status_t status)
{
    return jal_status_name(status);
}

uint32_t jal_api_version(void)
{
    return (JAL_API_VERSION_MAJOR << 16) | JAL_API_VERSION_MINOR;
}

jal_status_t jal_set_log_handler(jal_log_fn fn, void* user)
{
    return call([&] {
        if (!fn)
            jal::runtime::detail::set_log_handler(nullptr);
        else
            jal::runtime::detail::set_log_handler(
                [fn, user](int level, const std::string& m) { fn(level, m.c_str(), user); });
    });
}

// ---- devices ----

jal_status_t jal_device_enumerate(const char* emu_dir, uint32_t* indices, uint32_t capacity,
                                  uint32_t* count)
{
    REQUIRE(count, "count is NULL");
    REQUIRE(indices || capacity == 0, "indices is NULL");
    return call([&] {
        auto found = jal::ChipFunction::enumerate(emu_dir ? emu_dir : "");
        for (size_t i = 0; i < found.size() && i < capacity; i++) indices[i] = found[i].index;
        *count = static_cast<uint32_t>(found.size());
    });
}

jal_status_t jal_device_open(uint32_t index, const jal_open_options_t* options_in,
                             jal_device_t* out)
{
    jal::runtime::detail::HostSpan span_("jal_device_open");
    REQUIRE(out, "out is NULL");
    REQUIRE(!options_in || struct_ok(options_in), "options.struct_size is not set");
    *out = nullptr;
    return call([&] {
        jal_open_options_t o = copy_in(options_in);
        jal::OpenOptions options;
        if (o.emu_dir) options.emu_dir = o.emu_dir;
        if (o.client_name) options.client_name = o.client_name;
        if (o.admin_timeout_ms)
            options.admin_timeout = std::chrono::milliseconds(o.admin_timeout_ms);
        auto ready_timeout =
            std::chrono::milliseconds(o.ready_timeout_ms ? o.ready_timeout_ms : 30000);
        auto start = std::chrono::steady_clock::now();
        jal::ChipFunction device = jal::ChipFunction::open(index, options);
        jal::DeviceStatus s = device.wait_ready(ready_timeout);
        if (s.state != jal::DeviceState::ready)
            throw not_ready_error(index, s, start, ready_timeout);
        *out =
            new jal_device_s{std::make_shared<jal::runtime::detail::DeviceCore>(std::move(device))};
    });
}

jal_status_t jal_device_close(jal_device_t device)
{
    jal::runtime::detail::HostSpan span_("jal_device_close");
    delete device;
    return JAL_STATUS_OK;
}

jal_status_t jal_device_identify(jal_device_t device, struct jal_identify* out)
{
    jal::runtime::detail::HostSpan span_("jal_device_identify");
    REQUIRE(device && out, "device or out is NULL");
    return call([&] { *out = device->core->device().identify(); });
}

// ---- contexts ----

jal_status_t jal_context_create(jal_device_t device, jal_context_t* out)
{
    jal::runtime::detail::HostSpan span_("jal_context_create");
    REQUIRE(device && out, "device or out is NULL");
    *out = nullptr;
    return call([&] {
        *out = new jal_context_s{std::make_shared<jal::runtime::detail::Context>(device->core)};
    });
}

jal_status_t jal_context_destroy(jal_context_t context, uint32_t* leaked)
{
    jal::runtime::detail::HostSpan span_("jal_context_destroy");
    if (!context) return JAL_STATUS_OK;
    jal_status_t st = call([&] {
        auto leaks = context->context->destroy();
        if (leaked) *leaked = leaks.allocations + leaks.queues;
    });
    delete context;
    return st;
}

jal_status_t jal_context_id(jal_context_t context, uint32_t* id)
{
    REQUIRE(context && id, "context or id is NULL");
    *id = context->context->id();
    return JAL_STATUS_OK;
}

// ---- device memory ----

jal_status_t jal_mem_alloc(jal_context_t context, uint64_t size, uint32_t placement,
                           uint64_t slice_mask, uint64_t alignment, jal_mem_t* out)
{
    jal::runtime::detail::HostSpan span_("jal_mem_alloc");
    REQUIRE(context && out, "context or out is NULL");
    *out = nullptr;
    return call([&] {
        jal::runtime::detail::PlacementRequest p;
        p.kind = placement;
        p.slice_mask = slice_mask;
        p.alignment = alignment;
        *out = new jal_mem_s{
            std::make_unique<jal::runtime::detail::Allocation>(context->context, size, p)};
    });
}

jal_status_t jal_mem_free(jal_mem_t mem)
{
    jal::runtime::detail::HostSpan span_("jal_mem_free");
    if (!mem) return JAL_STATUS_OK;
    jal_status_t st = call([&] { mem->allocation->free(); });
    delete mem;
    return st;
}

jal_status_t jal_mem_get_info(jal_mem_t mem, jal_mem_info_t* out)
{
    REQUIRE(mem && struct_ok(out), "mem is NULL or out.struct_size is not set");
    const jal_mem_alloc_reply& r = mem->allocation->info();
    jal_mem_info_t info{};
    info.placement = r.placement;
    info.va = r.va;
    info.size = r.size;
    info.slice_mask = r.slice_mask;
    info.page_size = r.page_size;
    info.pages = r.pages;
    info.replicas = r.replicas;
    copy_out(out, info);
    return JAL_STATUS_OK;
}

jal_status_t jal_mem_export(jal_mem_t mem, uint64_t offset, uint64_t size, jal_peer_export_t* out)
{
    jal::runtime::detail::HostSpan span_("jal_mem_export");
    REQUIRE(mem && struct_ok(out), "mem is NULL or out.struct_size is not set");
    return call([&] {
        const jal_mem_export_reply e = mem->allocation->export_range(offset, size);
        jal_peer_export_t x{};
        x.chip = e.chip;
        x.handle = e.handle;
        x.pages = e.pages;
        x.key = e.key;
        x.size = e.size;
        copy_out(out, x);
    });
}

jal_status_t jal_peer_import(jal_context_t context, const jal_peer_export_t* exported,
                             jal_mem_t* out)
{
    jal::runtime::detail::HostSpan span_("jal_peer_import");
    REQUIRE(context && out && exported && exported->struct_size >= sizeof(jal_peer_export_t),
            "context, exported or out is NULL, or exported->struct_size is not set");
    *out = nullptr;
    return call([&] {
        jal_mem_export_reply e{};
        e.chip = exported->chip;
        e.handle = exported->handle;
        e.pages = exported->pages;
        e.key = exported->key;
        *out =
            new jal_mem_s{std::make_unique<jal::runtime::detail::Allocation>(context->context, e)};
    });
}

jal_status_t jal_peer_map(jal_context_t context, jal_mem_t peer_mem, uint64_t offset, uint64_t size,
                          jal_mem_t* out, uint64_t* local_va)
{
    jal::runtime::detail::HostSpan span_("jal_peer_map");
    REQUIRE(context && peer_mem && out, "context, peer_mem or out is NULL");
    *out = nullptr;
    return call([&] {
        if (&peer_mem->allocation->context().device() == &context->context->device())
            throw jal::Error(JAL_STATUS_INVALID_FIELD,
                             "peer_mem is on the context's own device: use it directly");
        const jal_mem_export_reply e = peer_mem->allocation->export_range(offset, size);
        *out =
            new jal_mem_s{std::make_unique<jal::runtime::detail::Allocation>(context->context, e)};
        if (local_va) *local_va = (*out)->allocation->va();
    });
}

jal_status_t jal_peer_unmap(jal_mem_t mapping)
{
    REQUIRE(!mapping || mapping->allocation->info().placement == JAL_PLACE_PEER,
            "not a peer mapping (jal_peer_map, jal_peer_import): use jal_mem_free");
    return jal_mem_free(mapping);
}

jal_status_t jal_mem_placement(jal_mem_t mem, uint32_t first_page, struct jal_page_placement* out,
                               uint32_t capacity, uint32_t* count)
{
    REQUIRE(mem && count && (out || capacity == 0), "mem, out or count is NULL");
    return call([&] {
        auto entries = mem->allocation->placement(first_page, capacity);
        std::copy(entries.begin(), entries.end(), out);
        *count = static_cast<uint32_t>(entries.size());
    });
}

// ---- host memory ----

jal_status_t jal_host_alloc(jal_device_t device, uint64_t size, jal_host_buffer_t* out)
{
    jal::runtime::detail::HostSpan span_("jal_host_alloc");
    REQUIRE(device && out, "device or out is NULL");
    *out = nullptr;
    return call([&] {
        *out = new jal_host_buffer_s{
            std::make_unique<jal::runtime::detail::HostBuffer>(device->core, size)};
    });
}

jal_status_t jal_host_free(jal_host_buffer_t buffer)
{
    jal::runtime::detail::HostSpan span_("jal_host_free");
    return call([&] { delete buffer; });
}

jal_status_t jal_host_buffer_info(jal_host_buffer_t buffer, void** ptr, uint64_t* bus_addr,
                                  uint64_t* size)
{
    REQUIRE(buffer, "buffer is NULL");
    if (ptr) *ptr = buffer->buffer->data();
    if (bus_addr) *bus_addr = buffer->buffer->bus_addr();
    if (size) *size = buffer->buffer->size();
    return JAL_STATUS_OK;
}

// ---- signals ----

jal_status_t jal_signal_create(jal_device_t device, int64_t initial, uint32_t flags,
                               jal_signal_t* out)
{
    jal::runtime::detail::HostSpan span_("jal_signal_create");
    REQUIRE(device && out, "device or out is NULL");
    REQUIRE((flags & ~(JAL_SIGNAL_INTERRUPT | JAL_SIGNAL_TIMESTAMPS)) == 0, "unknown signal flags");
    *out = nullptr;
    return call([&] {
        *out = new jal_signal_s{std::make_unique<jal::runtime::detail::Signal>(
            device->core, initial, (flags & JAL_SIGNAL_INTERRUPT) != 0,
            (flags & JAL_SIGNAL_TIMESTAMPS) != 0)};
    });
}

jal_status_t jal_signal_destroy(jal_signal_t signal)
{
    jal::runtime::detail::HostSpan span_("jal_signal_destroy");
    delete signal;
    return JAL_STATUS_OK;
}

jal_status_t jal_signal_load(jal_signal_t signal, int64_t* value, uint32_t* packet_status)
{
    REQUIRE(signal, "signal is NULL");
    return call([&] {
        signal->signal->device().check_not_reset_cached();
        auto seen = signal->signal->load();
        if (value) *value = seen.value;
        if (packet_status) *packet_status = seen.status;
    });
}

jal_status_t jal_signal_store(jal_signal_t signal, int64_t value)
{
    REQUIRE(signal, "signal is NULL");
    return call([&] {
        signal->signal->device().check_not_reset_cached();
        signal->signal->store(value);
    });
}

jal_status_t jal_signal_bus_addr(jal_signal_t signal, uint64_t* bus_addr)
{
    REQUIRE(signal && bus_addr, "signal or bus_addr is NULL");
    *bus_addr = signal->signal->bus_addr();
    return JAL_STATUS_OK;
}

jal_status_t jal_signal_wait(jal_signal_t signal, uint32_t condition, int64_t compare,
                             uint64_t timeout_ns, uint32_t mode, int64_t* value,
                             uint32_t* packet_status)
{
    jal::runtime::detail::HostSpan span_("jal_signal_wait", "wait");
    REQUIRE(signal, "signal is NULL");
    REQUIRE(condition <= JAL_SIGNAL_GTE, "unknown signal condition");
    REQUIRE(mode >= JAL_WAIT_POLL && mode <= JAL_WAIT_HYBRID, "unknown wait mode");
    jal::runtime::detail::SignalObservation seen;
    jal_status_t st = call([&] {
        jal::runtime::detail::WaitOptions o;
        o.condition = static_cast<jal::runtime::detail::SignalCondition>(condition);
        o.compare = compare;
        o.mode = static_cast<jal::runtime::detail::WaitMode>(mode);
        o.timeout = timeout_ns >= static_cast<uint64_t>(std::chrono::nanoseconds::max().count())
                        ? std::chrono::nanoseconds::max()
                        : std::chrono::nanoseconds(timeout_ns);
        seen = signal->signal->wait(o);
    });
    if (st != JAL_STATUS_OK) return st;
    span_.arg("satisfied", seen.satisfied ? 1 : 0);
    if (value) *value = seen.value;
    if (packet_status) *packet_status = seen.status;
    if (!seen.satisfied)
        return fail(JAL_STATUS_TIMEOUT,
                    "signal wait timed out (value " + std::to_string(seen.value) + ")");
    return JAL_STATUS_OK;
}

// ---- queues ----

jal_status_t jal_queue_create(jal_context_t context, uint32_t size, uint32_t vector,
                              jal_queue_t* out)
{
    jal::runtime::detail::HostSpan span_("jal_queue_create");
    REQUIRE(context && out, "context or out is NULL");
    *out = nullptr;
    return call([&] {
        *out = new jal_queue_s{
            std::make_unique<jal::runtime::detail::UserQueue>(context->context, size, vector)};
    });
}

jal_status_t jal_queue_destroy(jal_queue_t queue)
{
    jal::runtime::detail::HostSpan span_("jal_queue_destroy");
    if (queue) span_.arg("queue", queue->queue->id());
    if (!queue) return JAL_STATUS_OK;
    jal_status_t st = call([&] { queue->queue->destroy(); });
    delete queue;
    return st;
}

jal_status_t jal_queue_get_status(jal_queue_t queue, struct jal_queue_status* out)
{
    jal::runtime::detail::HostSpan span_("jal_queue_get_status");
    if (queue) span_.arg("queue", queue->queue->id());
    REQUIRE(queue && out, "queue or out is NULL");
    return call([&] { *out = queue->queue->status(); });
}

jal_status_t jal_queue_reset(jal_queue_t queue)
{
    jal::runtime::detail::HostSpan span_("jal_queue_reset");
    if (queue) span_.arg("queue", queue->queue->id());
    REQUIRE(queue, "queue is NULL");
    return call([&] { queue->queue->reset(); });
}

jal_status_t jal_queue_id(jal_queue_t queue, uint32_t* id)
{
    REQUIRE(queue && id, "queue or id is NULL");
    *id = queue->queue->id();
    return JAL_STATUS_OK;
}

jal_status_t jal_queue_set_submit_timeout(jal_queue_t queue, uint64_t timeout_ns)
{
    REQUIRE(queue, "queue is NULL");
    queue->queue->set_submit_timeout(
        timeout_ns >= static_cast<uint64_t>(std::chrono::nanoseconds::max().count())
            ? std::chrono::nanoseconds::max()
            : std::chrono::nanoseconds(timeout_ns));
    return JAL_STATUS_OK;
}

jal_status_t jal_queue_nop(jal_queue_t queue, jal_signal_t completion)
{
    jal::runtime::detail::HostSpan span_("jal_queue_nop");
    if (queue) span_.arg("queue", queue->queue->id());
    REQUIRE(queue, "queue is NULL");
    return call([&] { queue->queue->nop(sig(completion)); });
}

jal_status_t jal_queue_copy(jal_queue_t queue, uint32_t dir, uint64_t dst, uint64_t src,
                            uint64_t size, jal_signal_t completion)
{
    jal::runtime::detail::HostSpan span_("jal_queue_copy");
    if (queue) span_.arg("queue", queue->queue->id());
    REQUIRE(queue, "queue is NULL");
    return call([&] {
        queue->queue->copy(static_cast<jal_copy_dir>(dir), dst, src, size, sig(completion));
    });
}

jal_status_t jal_queue_barrier_and(jal_queue_t queue, const jal_signal_t* deps, uint32_t count,
                                   jal_signal_t completion)
{
    jal::runtime::detail::HostSpan span_("jal_queue_barrier_and");
    if (queue) span_.arg("queue", queue->queue->id());
    REQUIRE(queue && (deps || count == 0), "queue or deps is NULL");
    REQUIRE(count >= 1 && count <= JAL_BARRIER_DEPS_MAX, "a barrier waits for 1..5 signals");
    return call([&] {
        jal::runtime::detail::Signal* list[JAL_BARRIER_DEPS_MAX] = {};
        for (uint32_t i = 0; i < count; i++) list[i] = sig(deps[i]);
        queue->queue->barrier_and(std::span(list, count), sig(completion));
    });
}

jal_status_t jal_queue_signal(jal_queue_t queue, jal_signal_t target, uint32_t op, int64_t operand,
                              jal_signal_t completion)
{
    jal::runtime::detail::HostSpan span_("jal_queue_signal");
    if (queue) span_.arg("queue", queue->queue->id());
    REQUIRE(queue && target, "queue or target is NULL");
    return call([&] {
        queue->queue->signal(*target->signal, static_cast<jal_signal_op>(op), operand,
                             sig(completion));
    });
}

jal_status_t jal_queue_write_value(jal_queue_t queue, uint64_t addr, uint64_t value, uint32_t flags,
                                   jal_signal_t completion)
{
    jal::runtime::detail::HostSpan span_("jal_queue_write_value");
    REQUIRE(queue, "queue is NULL");
    REQUIRE((flags & ~uint32_t{JAL_PACKET_F_CHAIN}) == 0, "flags has bits other than CHAIN");
    return call([&] {
        queue->queue->write_value(addr, value, sig(completion), static_cast<uint8_t>(flags));
    });
}

jal_status_t jal_queue_wait_value(jal_queue_t queue, uint64_t addr, uint32_t op, uint64_t value,
                                  uint32_t timeout_us, uint32_t flags, jal_signal_t completion)
{
    jal::runtime::detail::HostSpan span_("jal_queue_wait_value");
    REQUIRE(queue, "queue is NULL");
    REQUIRE((flags & ~uint32_t{JAL_PACKET_F_CHAIN}) == 0, "flags has bits other than CHAIN");
    return call([&] {
        queue->queue->wait_value(addr, static_cast<jal_value_op>(op), value, timeout_us,
                                 sig(completion), static_cast<uint8_t>(flags));
    });
}

jal_status_t jal_queue_submit_raw(jal_queue_t queue, const void* packet)
{
    jal::runtime::detail::HostSpan span_("jal_queue_submit_raw");
    if (queue) span_.arg("queue", queue->queue->id());
    REQUIRE(queue && packet, "queue or packet is NULL");
    return call([&] { queue->queue->submit_raw(packet); });
}

// ---- bulk I/O ----

jal_status_t jal_load_file(jal_queue_t queue, const char* path, uint64_t dst_va, uint64_t capacity,
                           const jal_load_options_t* options_in, jal_load_result_t* result)
{
    jal::runtime::detail::HostSpan span_("jal_load_file");
    REQUIRE(queue && path, "queue or path is NULL");
    REQUIRE(!options_in || struct_ok(options_in), "options.struct_size is not set");
    REQUIRE(!result || struct_ok(result), "result.struct_size is not set");
    return call([&] {
        jal_load_options_t o = copy_in(options_in);
        jal::runtime::detail::LoadOptions options;
        options.try_direct = !(o.flags & JAL_LOAD_NO_DIRECT);
        if (o.chunk_bytes) options.chunk_bytes = o.chunk_bytes;
        if (o.depth) options.depth = o.depth;
        if (o.progress)
            options.progress = [&o](uint64_t done, uint64_t total) {
                return o.progress(done, total, o.user) == 0;
            };
        auto r = jal::runtime::detail::load_file(*queue->queue, path, dst_va, capacity, options);
        if (result) {
            jal_load_result_t out{};
            out.used_direct_io = r.direct;
            out.bytes = r.bytes;
            copy_out(result, out);
        }
    });
}

}  // extern "C"
