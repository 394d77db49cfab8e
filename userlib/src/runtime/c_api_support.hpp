// What the C API's source files share (jal_c_api.cpp and the files of later additions):
// the handle types behind jal.h's opaque pointers, and the conversion of exceptions into a
// status and the thread's last error message.
#pragma once

#include <jal/jal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <new>
#include <string>

#include <jal/error.hpp>

#include "host_trace.hpp"
#include "runtime_objects.hpp"

struct jal_device_s {
    std::shared_ptr<jal::runtime::detail::DeviceCore> core;
};
struct jal_context_s {
    std::shared_ptr<jal::runtime::detail::Context> context;
};
struct jal_mem_s {
    std::unique_ptr<jal::runtime::detail::Allocation> allocation;
};
struct jal_host_buffer_s {
    std::unique_ptr<jal::runtime::detail::HostBuffer> buffer;
};
struct jal_queue_s {
    std::unique_ptr<jal::runtime::detail::UserQueue> queue;
};
struct jal_signal_s {
    std::unique_ptr<jal::runtime::detail::Signal> signal;
};

namespace jal::runtime::capi {

// The calling thread's message for jal_last_error_message.
std::string& last_error();

inline jal_status_t fail(jal_status_t status, std::string message)
{
    last_error() = std::move(message);
    return status;
}

// Runs `f`; maps jal::Error to its status, anything else to INTERNAL / NO_MEMORY.
template <typename F>
inline jal_status_t call(F&& f)
{
    try {
        f();
        return JAL_STATUS_OK;
    } catch (const jal::Error& e) {
        return fail(e.status(), e.what());
    } catch (const std::bad_alloc&) {
        return fail(JAL_STATUS_NO_MEMORY, "out of host memory");
    } catch (const std::exception& e) {
        return fail(JAL_STATUS_INTERNAL, std::string("internal error: ") + e.what());
    }
}

#define REQUIRE(cond, what)                                       \
    do {                                                          \
        if (!(cond)) return fail(JAL_STATUS_INVALID_FIELD, what); \
    } while (0)

template <typename T>
inline bool struct_ok(const T* p)
{
    return p && p->struct_size >= sizeof(uint32_t);
}

// Copies `value` into a caller struct of possibly older (smaller) or newer (larger) size.
template <typename T>
inline void copy_out(T* out, T value)
{
    uint32_t size = out->struct_size;
    value.struct_size = static_cast<uint32_t>(std::min<size_t>(size, sizeof value));
    std::memcpy(out, &value, std::min<size_t>(size, sizeof value));
}

template <typename T>
inline T copy_in(const T* in)
{
    T value{};
    if (in) std::memcpy(&value, in, std::min<size_t>(in->struct_size, sizeof value));
    return value;
}

inline jal::runtime::detail::Signal* sig(jal_signal_t s)
{
    return s ? s->signal.get() : nullptr;
}

}  // namespace jal::runtime::capi
