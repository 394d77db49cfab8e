// jal.hpp: a thin C++20 layer over the C API (jal.h). Header-only: it adds RAII, spans and
// exceptions, nothing else, so what works in C works here the same way.
//
// Errors are exceptions: every failing call throws jal::Error (jal/error.hpp) carrying the
// jal_status and the library's message. After a device reset they carry
// JAL_STATUS_DEVICE_RESET (Error::device_reset()): drop the objects of the old Device and
// construct a new one (docs/userlib.md, "Device reset"). The one non-exceptional failure is a signal wait
// that times out, which returns a WaitResult with satisfied == false.
//
// Objects are move-only owners of their handle. Destroy children before the context and
// the device (they keep the device open until they go; a context destroyed first takes
// its memory and queues with it on the device).
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <jal/error.hpp>
#include <jal/jal.h>

namespace jal::runtime {

inline void check(jal_status_t status)
{
    if (status != JAL_STATUS_OK)
        throw Error(static_cast<jal_status>(status), jal_last_error_message());
}

// Move-only holder of a C handle and the function that releases it.
template <typename H, jal_status_t (*Release)(H)>
class Handle {
public:
    Handle() = default;
    explicit Handle(H h) : h_(h) {}
    Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
    Handle& operator=(Handle&& o) noexcept
    {
        if (this != &o) {
            reset();
            h_ = std::exchange(o.h_, nullptr);
        }
        return *this;
    }
    ~Handle() { reset(); }
    H get() const { return h_; }
    H release() { return std::exchange(h_, nullptr); }  // the caller releases it
    explicit operator bool() const { return h_ != nullptr; }
    void reset()
    {
        if (h_) Release(std::exchange(h_, nullptr));
    }

private:
    H h_ = nullptr;
};

inline jal_status_t release_context(jal_context_t c)
{
    return jal_context_destroy(c, nullptr);
}

struct WaitResult {
    bool satisfied = false;  // false: timed out
    int64_t value = 0;
    jal_status status = JAL_STATUS_OK;  // of the packet that completed the signal
};

class Device;

class Signal {
public:
    Signal(const Device& device, int64_t initial, bool interrupt = true);
    jal_signal_t get() const { return h_.get(); }

    int64_t value() const
    {
        int64_t v;
        check(jal_signal_load(get(), &v, nullptr));
        return v;
    }
    jal_status packet_status() const
    {
        uint32_t s;
        check(jal_signal_load(get(), nullptr, &s));
        return static_cast<jal_status>(s);
    }
    void store(int64_t value) { check(jal_signal_store(get(), value)); }

    WaitResult wait(jal_signal_condition condition, int64_t compare,
                    std::chrono::nanoseconds timeout = std::chrono::nanoseconds::max(),
                    jal_wait_mode mode = JAL_WAIT_HYBRID) const
    {
        WaitResult r;
        uint32_t status = 0;
        uint64_t ns = timeout == std::chrono::nanoseconds::max()
                          ? JAL_TIMEOUT_INFINITE
                          : static_cast<uint64_t>(timeout.count());
        jal_status_t st = jal_signal_wait(get(), condition, compare, ns, mode, &r.value, &status);
        r.status = static_cast<jal_status>(status);
        if (st == JAL_STATUS_TIMEOUT) return r;
        check(st);
        r.satisfied = true;
        return r;
    }
    // Waits for the value to reach 0 (one completion of a signal created with 1).
    WaitResult wait_zero(std::chrono::nanoseconds timeout = std::chrono::nanoseconds::max(),
                         jal_wait_mode mode = JAL_WAIT_HYBRID) const
    {
        return wait(JAL_SIGNAL_EQ, 0, timeout, mode);
    }

private:
    Handle<jal_signal_t, jal_signal_destroy> h_;
};

class HostBuffer {
public:
    HostBuffer(const Device& device, size_t bytes);
    jal_host_buffer_t get() const { return h_.get(); }
    std::span<std::byte> bytes() const { return {data_, size_}; }
    std::byte* data() const { return data_; }
    size_t size() const { return size_; }
    uint64_t bus_addr() const { return bus_; }

private:
    Handle<jal_host_buffer_t, jal_host_free> h_;
    std::byte* data_ = nullptr;
    size_t size_ = 0;
    uint64_t bus_ = 0;
};

class Context;

class Memory {
public:
    Memory(const Context& context, uint64_t bytes, jal_placement placement, uint64_t slice_mask,
           uint64_t alignment = 0);
    jal_mem_t get() const { return h_.get(); }
    const jal_mem_info_t& info() const { return info_; }
    uint64_t va() const { return info_.va; }
    uint64_t size() const { return info_.size; }
    std::vector<jal_page_placement> placement(uint32_t first_page = 0) const
    {
        std::vector<jal_page_placement> out(size_t{info_.pages - first_page} * info_.replicas);
        uint32_t n = 0;
        check(jal_mem_placement(get(), first_page, out.data(), static_cast<uint32_t>(out.size()),
                                &n));
        out.resize(n);
        return out;
    }
    // Frees now and reports a failure (the destructor cannot).
    void free() { check(jal_mem_free(h_.release())); }

    // Peer memory (API 1.4): exports [offset, offset + bytes) for contexts on other chips.
    jal_peer_export_t export_range(uint64_t offset, uint64_t bytes) const
    {
        jal_peer_export_t e{};
        e.struct_size = sizeof e;
        check(jal_mem_export(get(), offset, bytes, &e));
        return e;
    }
    // Maps an export of another chip in `context` (freeing the result unmaps it).
    static Memory import_peer(const Context& context, const jal_peer_export_t& exported);
    // Maps [offset, offset + bytes) of `peer` (memory of another device) in `context`.
    static Memory map_peer(const Context& context, const Memory& peer, uint64_t offset,
                           uint64_t bytes);

private:
    explicit Memory(jal_mem_t h) : h_(h)
    {
        info_.struct_size = sizeof info_;
        check(jal_mem_get_info(h, &info_));
    }
    Handle<jal_mem_t, jal_mem_free> h_;
    jal_mem_info_t info_{};
};

class Queue {
public:
    Queue(const Context& context, uint32_t size = 1024, uint32_t vector = 0);
    jal_queue_t get() const { return h_.get(); }
    uint32_t id() const
    {
        uint32_t id;
        check(jal_queue_id(get(), &id));
        return id;
    }

    void nop(const Signal* completion = nullptr) { check(jal_queue_nop(get(), sig(completion))); }
    void copy(jal_copy_dir dir, uint64_t dst, uint64_t src, uint64_t bytes,
              const Signal* completion = nullptr)
    {
        check(jal_queue_copy(get(), dir, dst, src, bytes, sig(completion)));
    }
    // Host buffer range -> device address, and back.
    void copy_to_device(uint64_t dst_va, const HostBuffer& src, size_t offset, size_t bytes,
                        const Signal* completion = nullptr)
    {
        copy(JAL_COPY_H2D, dst_va, src.bus_addr() + offset, bytes, completion);
    }
    void copy_to_host(const HostBuffer& dst, size_t offset, uint64_t src_va, size_t bytes,
                      const Signal* completion = nullptr)
    {
        copy(JAL_COPY_D2H, dst.bus_addr() + offset, src_va, bytes, completion);
    }
    void barrier_and(std::span<const Signal* const> deps, const Signal* completion = nullptr)
    {
        jal_signal_t list[JAL_BARRIER_DEPS_MAX] = {};
        if (deps.size() > JAL_BARRIER_DEPS_MAX)
            throw Error(JAL_STATUS_INVALID_FIELD, "a barrier waits for at most 5 signals");
        for (size_t i = 0; i < deps.size(); i++) list[i] = deps[i]->get();
        check(jal_queue_barrier_and(get(), list, static_cast<uint32_t>(deps.size()),
                                    sig(completion)));
    }
    void signal(const Signal& target, jal_signal_op op, int64_t operand,
                const Signal* completion = nullptr)
    {
        check(jal_queue_signal(get(), target.get(), op, operand, sig(completion)));
    }
    // A device word as a semaphore (jal_queue_write_value, jal_queue_wait_value).
    void write_value(uint64_t va, uint64_t value, const Signal* completion = nullptr,
                     uint32_t flags = 0)
    {
        check(jal_queue_write_value(get(), va, value, flags, sig(completion)));
    }
    void wait_value(uint64_t va, jal_value_op op, uint64_t value,
                    std::chrono::microseconds timeout = std::chrono::microseconds(0),
                    const Signal* completion = nullptr, uint32_t flags = 0)
    {
        check(jal_queue_wait_value(get(), va, op, value, static_cast<uint32_t>(timeout.count()),
                                   flags, sig(completion)));
    }
    void submit_raw(const void* packet) { check(jal_queue_submit_raw(get(), packet)); }
    // A kernel dispatch (jal_queue_dispatch); desc.size is filled in.
    void dispatch(jal_dispatch_desc desc, const Signal* completion = nullptr)
    {
        desc.size = sizeof desc;
        check(jal_queue_dispatch(get(), &desc, sig(completion)));
    }

    jal_queue_status status() const
    {
        jal_queue_status s{};
        check(jal_queue_get_status(get(), &s));
        return s;
    }
    void reset() { check(jal_queue_reset(get())); }
    void set_submit_timeout(std::chrono::nanoseconds t)
    {
        check(jal_queue_set_submit_timeout(get(), static_cast<uint64_t>(t.count())));
    }

    struct LoadResult {
        uint64_t bytes = 0;
        bool direct_io = false;
    };
    // Loads a file into device memory at dst_va (see jal_load_file). `progress` returns
    // false to cancel.
    LoadResult load_file(const std::string& path, uint64_t dst_va, uint64_t capacity,
                         std::function<bool(uint64_t done, uint64_t total)> progress = {},
                         uint32_t flags = 0)
    {
        jal_load_options_t o{};
        o.struct_size = sizeof o;
        o.flags = flags;
        if (progress) {
            o.progress = [](uint64_t done, uint64_t total, void* user) {
                return (*static_cast<std::function<bool(uint64_t, uint64_t)>*>(user))(done, total)
                           ? 0
                           : 1;
            };
            o.user = &progress;
        }
        jal_load_result_t r{};
        r.struct_size = sizeof r;
        check(jal_load_file(get(), path.c_str(), dst_va, capacity, &o, &r));
        return {r.bytes, r.used_direct_io != 0};
    }

private:
    static jal_signal_t sig(const Signal* s) { return s ? s->get() : nullptr; }
    Handle<jal_queue_t, jal_queue_destroy> h_;
};

class Context {
public:
    explicit Context(const Device& device);
    jal_context_t get() const { return h_.get(); }
    uint32_t id() const
    {
        uint32_t id;
        check(jal_context_id(get(), &id));
        return id;
    }
    // Destroys it now; returns how many allocations and queues it still held.
    uint32_t destroy()
    {
        uint32_t leaked = 0;
        check(jal_context_destroy(h_.release(), &leaked));
        return leaked;
    }

private:
    Handle<jal_context_t, release_context> h_;
};

class Device {
public:
    static std::vector<uint32_t> enumerate(const std::string& emu_dir = {})
    {
        uint32_t count = 0;
        const char* dir = emu_dir.empty() ? nullptr : emu_dir.c_str();
        check(jal_device_enumerate(dir, nullptr, 0, &count));
        std::vector<uint32_t> out(count);
        check(jal_device_enumerate(dir, out.data(), count, &count));
        out.resize(std::min<size_t>(count, out.size()));
        return out;
    }

    explicit Device(uint32_t index, const std::string& emu_dir = {})
    {
        jal_open_options_t o{};
        o.struct_size = sizeof o;
        o.emu_dir = emu_dir.empty() ? nullptr : emu_dir.c_str();
        jal_device_t h;
        check(jal_device_open(index, &o, &h));
        h_ = Handle<jal_device_t, jal_device_close>(h);
    }
    jal_device_t get() const { return h_.get(); }
    jal_identify identify() const
    {
        jal_identify id{};
        check(jal_device_identify(get(), &id));
        return id;
    }
    jal_device_memory_info_t memory_info() const
    {
        jal_device_memory_info_t m{};
        m.struct_size = sizeof m;
        check(jal_device_memory_info(get(), &m));
        return m;
    }
    jal_telemetry telemetry() const
    {
        jal_telemetry t{};
        t.struct_size = sizeof t;
        check(jal_device_telemetry(get(), &t));
        return t;
    }

private:
    Handle<jal_device_t, jal_device_close> h_;
};

inline Signal::Signal(const Device& device, int64_t initial, bool interrupt)
{
    jal_signal_t h;
    check(jal_signal_create(device.get(), initial, interrupt ? JAL_SIGNAL_INTERRUPT : 0, &h));
    h_ = Handle<jal_signal_t, jal_signal_destroy>(h);
}

inline HostBuffer::HostBuffer(const Device& device, size_t bytes)
{
    jal_host_buffer_t h;
    check(jal_host_alloc(device.get(), bytes, &h));
    h_ = Handle<jal_host_buffer_t, jal_host_free>(h);
    void* p;
    uint64_t size;
    check(jal_host_buffer_info(h, &p, &bus_, &size));
    data_ = static_cast<std::byte*>(p);
    size_ = bytes;
}

inline Memory::Memory(const Context& context, uint64_t bytes, jal_placement placement,
                      uint64_t slice_mask, uint64_t alignment)
{
    jal_mem_t h;
    check(jal_mem_alloc(context.get(), bytes, placement, slice_mask, alignment, &h));
    h_ = Handle<jal_mem_t, jal_mem_free>(h);
    info_.struct_size = sizeof info_;
    check(jal_mem_get_info(h, &info_));
}

inline Memory Memory::import_peer(const Context& context, const jal_peer_export_t& exported)
{
    jal_mem_t h;
    check(jal_peer_import(context.get(), &exported, &h));
    return Memory(h);
}

inline Memory Memory::map_peer(const Context& context, const Memory& peer, uint64_t offset,
                               uint64_t bytes)
{
    jal_mem_t h;
    check(jal_peer_map(context.get(), peer.get(), offset, bytes, &h, nullptr));
    return Memory(h);
}

inline Queue::Queue(const Context& context, uint32_t size, uint32_t vector)
{
    jal_queue_t h;
    check(jal_queue_create(context.get(), size, vector, &h));
    h_ = Handle<jal_queue_t, jal_queue_destroy>(h);
}

inline Context::Context(const Device& device)
{
    jal_context_t h;
    check(jal_context_create(device.get(), &h));
    h_ = Handle<jal_context_t, release_context>(h);
}

}  // namespace jal::runtime
