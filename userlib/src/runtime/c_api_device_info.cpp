// The C API's device queries beyond identify (API 1.3): memory in use and telemetry.
#include <jal/chip_function.hpp>
#include <jal/jal.h>

#include "c_api_support.hpp"

using namespace jal::runtime::capi;

namespace {

jal_device_memory_info_t memory_info_of(const jal_memory_info& m)
{
    jal_device_memory_info_t out{};
    out.slices = std::min<uint32_t>(m.slices, JAL_NUM_SLICES);
    out.total_bytes = m.bytes_total;
    out.free_bytes = std::min(m.bytes_free, m.bytes_total);
    out.used_bytes = out.total_bytes - out.free_bytes;
    out.client_bytes = m.bytes_function;
    out.allocations = m.allocations;
    out.contexts = m.contexts;
    out.page_size = m.page_size;
    for (uint32_t i = 0; i < out.slices; ++i) {
        out.slice_pages_total[i] = m.slice[i].pages_total;
        out.slice_pages_free[i] = m.slice[i].pages_free;
    }
    return out;
}

}  // namespace

extern "C" {

jal_status_t jal_device_memory_info(jal_device_t device, jal_device_memory_info_t* out)
{
    jal::runtime::detail::HostSpan span_("jal_device_memory_info");
    REQUIRE(device && struct_ok(out), "device or out is NULL, or out->struct_size is 0");
    return call([&] { copy_out(out, memory_info_of(device->core->device().memory_info())); });
}

jal_status_t jal_device_telemetry(jal_device_t device, struct jal_telemetry* out)
{
    jal::runtime::detail::HostSpan span_("jal_device_telemetry");
    REQUIRE(device && struct_ok(out), "device or out is NULL, or out->struct_size is 0");
    return call([&] { copy_out(out, device->core->device().telemetry()); });
}

}  // extern "C"
