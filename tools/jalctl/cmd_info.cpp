// jalctl info: identity, capacity, firmware and limits of one device.
#include <fmt/format.h>

#include "context.hpp"
#include "event_decode.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "table.hpp"

namespace jal::ctl {

namespace {

std::string gib(uint64_t bytes)
{
    return fmt::format("{:.3f} GiB", bytes / double(1ull << 30));
}

int run_info(Context& ctx)
{
    jal::ChipFunction dev = ctx.open();
    auto wait = std::chrono::milliseconds(static_cast<long long>(ctx.boot_wait_s * 1000));
    jal::DeviceStatus status = dev.wait_ready(wait);
    json j = status_json(status);
    j["device"] = dev.index();
    j["socket"] = dev.location();
    j["host_function"] = dev.host_function();
    std::optional<jal_identify> id;
    if (status.state == jal::DeviceState::ready || status.state == jal::DeviceState::failed) {
        try {
            id = dev.identify();
        } catch (const jal::Error& e) {
            // A failed chip that cannot answer still gets its registers reported.
            if (status.state == jal::DeviceState::ready) throw;
            j["identify_error"] = e.what();
        }
    }
    if (id) j.update(identify_json(*id));
    std::optional<jal_usage> usage;
    if (status.state == jal::DeviceState::ready) {
        try {
            usage = dev.usage();
            j["memory"] = memory_json(*usage);
        } catch (const jal::Error& e) {
            j["memory"] = nullptr;  // firmware before interface 1.6
        }
    }

    if (ctx.json) {
        ctx.print_json(j);
        return kExitOk;
    }
    KeyValueList out;
    out.add("Device", fmt::format("{} ({}, host function {})", dev.index(), dev.location(),
                                  dev.host_function()));
    out.add("State",
            std::string(jal::state_name(status.state)) + (status.degraded ? " (degraded)" : ""));
    if (status.state == jal::DeviceState::failed) out.add("Fault", jal_status_name(status.fault));
    if (status.state != jal::DeviceState::ready)
        out.add("Boot step", fmt::format("{} ({}), POST code {}", status.boot_step,
                                         jal_status_name(status.boot_step_status),
                                         post_code_text(status.post_code)));
    if (id) {
        out.add("Model", device_string(id->model));
        out.add("Serial", device_string(id->serial));
        out.add("Firmware", fmt::format("{} ({})", jal::format_fw_version(id->fw_version),
                                        device_string(id->fw_build)));
        out.add("Interface version", j["interface_version"].get<std::string>());
        out.add("Chip index", std::to_string(id->chip_index));
        out.add("Boot count", std::to_string(id->boot_count));
        out.add("Slices", fmt::format("{} of {} enabled", id->slices_enabled, id->slices_total));
        out.add("HBM", fmt::format("{} usable of {} ({} stacks, {} of {} channels ok)",
                                   gib(id->hbm_bytes_usable), gib(id->hbm_bytes_total),
                                   id->hbm_stacks, id->hbm_channels_ok, id->hbm_channels_total));
        if (usage) {
            const json m = memory_json(*usage);
            out.add("Memory", fmt::format("{} used of {} ({:.1f}%), {} free",
                                          bytes_text(m["used_bytes"].get<uint64_t>()),
                                          bytes_text(m["total_bytes"].get<uint64_t>()),
                                          m["used_percent"].get<double>(),
                                          bytes_text(m["free_bytes"].get<uint64_t>())));
        }
        out.add("Power limit", fmt::format("{:.1f} W (range {:.0f}-{:.0f} W, TDP {:.0f} W)",
                                           milli(id->power_limit_mw), milli(id->power_limit_min_mw),
                                           milli(id->power_limit_max_mw), milli(id->tdp_mw)));
        out.add("Clock", fmt::format("{}-{} MHz", id->clock_min_mhz, id->clock_max_mhz));
        out.add("Junction limit", fmt::format("{:.1f} °C", milli(id->temp_limit_mc)));
    } else {
        out.add("Firmware", jal::format_fw_version(status.fw_version));
    }
    out.print(std::cout);
    return kExitOk;
}

}  // namespace

void add_info_command(CLI::App& app, Context& ctx)
{
    CLI::App* sub = app.add_subcommand(
        "info",
        "Identity, firmware, slices, HBM capacity and limits of a device.\n"
        "Waits up to --wait seconds for a booting device, then reports its state either way.");
    add_common_options(*sub, ctx);
    sub->callback([&ctx] {
        ctx.all_mode = Context::AllDevices::each;
        ctx.action = [&ctx] { return run_info(ctx); };
    });
}

}  // namespace jal::ctl
