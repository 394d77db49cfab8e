// jal::ChipFunction methods that are one admin command each.
#include <jal/chip_function.hpp>

#include <jal/hw/admin.h>

#include "chip_function_impl.hpp"

namespace jal {

namespace {

// Replies shorter than the structure would leave fields silently zero: refuse them.
void require_bytes(const ChipFunction::Impl::Reply& reply, size_t need, const char* what)
{
    if (reply.completion.result < need)
        throw Error(JAL_STATUS_PROTOCOL, std::string(what) + " reply has " +
                                             std::to_string(reply.completion.result) +
                                             " bytes, expected " + std::to_string(need));
}

}  // namespace

jal_identify ChipFunction::identify()
{
    return impl_->guarded([&] {
        auto reply = impl_->run(JAL_ADMIN_IDENTIFY, {}, sizeof(jal_identify));
        require_bytes(reply, offsetof(jal_identify, reserved), "IDENTIFY");
        return copy_struct<jal_identify>(reply.data);
    });
}

jal_telemetry ChipFunction::telemetry()
{
    return impl_->guarded([&] {
        auto reply = impl_->run(JAL_ADMIN_GET_TELEMETRY, {}, sizeof(jal_telemetry));
        require_bytes(reply, offsetof(jal_telemetry, reserved), "GET_TELEMETRY");
        return copy_struct<jal_telemetry>(reply.data);
    });
}

jal_usage ChipFunction::usage()
{
    return impl_->guarded([&] {
        auto reply = impl_->run(JAL_ADMIN_GET_USAGE, {}, sizeof(jal_usage));
        require_bytes(reply, sizeof(jal_usage), "GET_USAGE");
        return copy_struct<jal_usage>(reply.data);
    });
}

jal_slice_map ChipFunction::slice_map()
{
    return impl_->guarded([&] {
        auto reply = impl_->run(JAL_ADMIN_GET_SLICE_MAP, {}, sizeof(jal_slice_map));
        require_bytes(reply, sizeof(jal_slice_map), "GET_SLICE_MAP");
        return copy_struct<jal_slice_map>(reply.data);
    });
}

HbmReport ChipFunction::hbm_report(uint32_t first_channel, uint32_t count)
{
    return impl_->guarded([&] {
        HbmReport out;
        if (count == 0) return out;
        size_t len = sizeof(jal_hbm_report_header) + size_t{count} * sizeof(jal_hbm_channel_report);
        if (len > JAL_ADMIN_DATA_MAX)
            throw Error(JAL_STATUS_INVALID_LENGTH, "HBM report of " + std::to_string(count) +
                                                       " channels does not fit one command");
        auto reply = impl_->run(JAL_ADMIN_GET_HBM_REPORT, {first_channel, count},
                                static_cast<uint32_t>(len));
        require_bytes(reply, sizeof(jal_hbm_report_header), "GET_HBM_REPORT");
        out.header = copy_struct<jal_hbm_report_header>(reply.data);
        size_t fits = (std::min<size_t>(reply.completion.result, len) - sizeof out.header) /
                      sizeof(jal_hbm_channel_report);
        size_t n = std::min<size_t>(out.header.count, fits);
        for (size_t i = 0; i < n; i++)
            out.channels.push_back(copy_struct<jal_hbm_channel_report>(
                reply.data, sizeof out.header + i * sizeof(jal_hbm_channel_report)));
        return out;
    });
}

LinkReport ChipFunction::link_report(uint32_t first_port, uint32_t count)
{
    return impl_->guarded([&] {
        LinkReport out;
        if (count == 0) return out;
        const size_t len = sizeof(jal_link_report_header) +
                           size_t{std::min(count, JAL_LINK_PORTS)} * sizeof(jal_link_port_report);
        auto reply =
            impl_->run(JAL_ADMIN_GET_LINK_REPORT, {first_port, count}, static_cast<uint32_t>(len));
        require_bytes(reply, sizeof(jal_link_report_header), "GET_LINK_REPORT");
        out.header = copy_struct<jal_link_report_header>(reply.data);
        size_t fits = (std::min<size_t>(reply.completion.result, len) - sizeof out.header) /
                      sizeof(jal_link_port_report);
        size_t n = std::min<size_t>(out.header.count, fits);
        for (size_t i = 0; i < n; i++)
            out.ports.push_back(copy_struct<jal_link_port_report>(
                reply.data, sizeof out.header + i * sizeof(jal_link_port_report)));
        return out;
    });
}

uint32_t ChipFunction::power_limit_mw()
{
    return impl_->guarded([&] {
        return impl_->run(JAL_ADMIN_GET_FEATURE, {JAL_FEATURE_POWER_LIMIT}).completion.result;
    });
}

uint32_t ChipFunction::persistent_power_limit_mw()
{
    return impl_->guarded([&] {
        return impl_->run(JAL_ADMIN_GET_FEATURE, {JAL_FEATURE_POWER_LIMIT_PERSISTENT})
            .completion.result;
    });
}

uint32_t ChipFunction::set_persistent_power_limit_mw(uint32_t milliwatts)
{
    return impl_->guarded([&] {
        return impl_->run(JAL_ADMIN_SET_FEATURE, {JAL_FEATURE_POWER_LIMIT_PERSISTENT, milliwatts})
            .completion.result;
    });
}

uint32_t ChipFunction::set_power_limit_mw(uint32_t milliwatts)
{
    return impl_->guarded([&] {
        return impl_->run(JAL_ADMIN_SET_FEATURE, {JAL_FEATURE_POWER_LIMIT, milliwatts})
            .completion.result;
    });
}

}  // namespace jal
