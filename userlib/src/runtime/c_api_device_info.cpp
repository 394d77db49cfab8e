// The C API's device queries beyond identify (API 1.3): memory in use (the admin command
// GET_USAGE) and telemetry.
#include <jal/chip_function.hpp>
#include <jal/jal.h>

#include "c_api_support.hpp"

using namespace jal::runtime::capi;

namespace {

// GET_USAGE (interface 1.6) as the C API reports it; `fn` is this handle's host function.
jal_device_memory_info_t memory_info_of(const jal_usage& u, uint32_t fn)
{
    const uint64_t page = u.page_size;
    jal_device_memory_info_t out{};
    out.slices = std::min<uint32_t>(u.slices, JAL_NUM_SLICES);
    out.total_bytes = uint64_t{u.pages_total} * page;
    out.free_bytes = std::min(uint64_t{u.pages_free} * page, out.total_bytes);
    out.used_bytes = out.total_bytes - out.free_bytes;
    if (fn < JAL_USAGE_FUNCTIONS) out.client_bytes = uint64_t{u.functions[fn].pages} * page;
    out.allocations = u.allocations;
    out.contexts = u.contexts;
    out.page_size = u.page_size;
    for (uint32_t i = 0; i < out.slices; ++i) {
        out.slice_pages_total[i] = u.slice_pages_total[i];
        out.slice_pages_free[i] = u.slice_pages_free[i];
    }
    return out;
}

}  // namespace

extern "C" {

jal_status_t jal_device_memory_info(jal_device_t device, jal_device_memory_info_t* out)
{
    jal::runtime::detail::HostSpan span_("jal_device_memory_info");
    REQUIRE(device && struct_ok(out), "device or out is NULL, or out->struct_size is 0");
    return call([&] {
        jal::ChipFunction& chip = device->core->device();
        jal_usage usage;
        try {
            usage = chip.usage();
        } catch (const jal::Error& e) {
            if (e.status() != JAL_STATUS_INVALID_OPCODE) throw;
            throw jal::Error(JAL_STATUS_UNSUPPORTED,
                             std::string(e.what()) + " (GET_USAGE needs device interface 1.6)");
        }
        copy_out(out, memory_info_of(usage, chip.host_function()));
    });
}

jal_status_t jal_device_telemetry(jal_device_t device, struct jal_telemetry* out)
{
    jal::runtime::detail::HostSpan span_("jal_device_telemetry");
    REQUIRE(device && struct_ok(out), "device or out is NULL, or out->struct_size is 0");
    return call([&] { copy_out(out, device->core->device().telemetry()); });
}

}  // extern "C"
