#include "context.hpp"

#include <chrono>

#include <fmt/format.h>

#include <jal/emu_dir.hpp>

#include "event_decode.hpp"
#include "json_views.hpp"

namespace jal::ctl {

std::string Context::socket_dir() const
{
    return emu_dir.empty() ? jal::default_emu_dir() : emu_dir;
}

jal::ChipFunction Context::open() const
{
    jal::OpenOptions options;
    options.client_name = "jalctl";
    options.emu_dir = socket_dir();
    return jal::ChipFunction::open(device, options);
}

jal::ChipFunction Context::open_booted(bool accept_failed) const
{
    jal::ChipFunction dev = open();
    auto wait = std::chrono::milliseconds(static_cast<long long>(boot_wait_s * 1000));
    jal::DeviceStatus s = dev.wait_ready(wait);
    if (s.state == jal::DeviceState::ready ||
        (accept_failed && s.state == jal::DeviceState::failed))
        return dev;
    if (s.state == jal::DeviceState::failed)
        throw jal::Error(JAL_STATUS_HW_FAILED,
                         fmt::format("device {}: boot failed at step {} (fault: {}, POST code {}); "
                                     "see `jalctl log --post -d {}`",
                                     device, s.boot_step, jal_status_name(s.fault),
                                     post_code_text(s.post_code), device));
    throw jal::Error(
        JAL_STATUS_NOT_READY,
        fmt::format("device {}: still {} after {} s (boot step {}, POST code {}); try --wait",
                    device, jal::state_name(s.state), boot_wait_s, s.boot_step,
                    post_code_text(s.post_code)));
}

void Context::print_json(const nlohmann::json& doc) const
{
    if (capture)
        *capture = doc;
    else
        std::cout << doc.dump(2) << std::endl;
}

void add_common_options(CLI::App& app, Context& ctx)
{
    app.add_option_function<std::string>(
           "-d,--device",
           [&ctx](const std::string& v) {
               ctx.all_devices = v == "all";
               if (!ctx.all_devices) ctx.device = static_cast<unsigned>(std::stoul(v));
           },
           "Device index (default 0), or `all`")
        ->check(CLI::Validator(
            [](std::string& v) -> std::string {
                if (v == "all") return {};
                if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != v.npos)
                    return "expected a device index or `all`, got '" + v + "'";
                return {};
            },
            "INDEX|all"));
    app.add_flag("--json", ctx.json, "Print one JSON document instead of text");
    app.add_option("--wait", ctx.boot_wait_s, "Seconds to wait for a booting device (default 10)")
        ->check(CLI::NonNegativeNumber);
    // Lets a script (or the install test) name the emulator without setting the environment.
    app.add_option("--emu-dir", ctx.emu_dir,
                   "jal-emu socket directory (default: $JAL_EMU_DIR, else "
                   "$XDG_RUNTIME_DIR/jal-emu or /tmp/jal-emu-<uid>)");
}

}  // namespace jal::ctl
