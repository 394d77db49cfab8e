// jalctl list: every device in the emulator directory, with its state and identity.
#include <fmt/format.h>

#include "context.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "table.hpp"

namespace jal::ctl {

namespace {

int run_list(Context& ctx)
{
    std::string dir = ctx.socket_dir();
    auto entries = jal::ChipFunction::enumerate(dir);
    json devices = json::array();
    Table table({{"INDEX", Table::Align::right}, {"SOCKET"}, {"STATE"}, {"MODEL"}, {"SERIAL"}});
    for (const auto& entry : entries) {
        json d{{"index", entry.index}, {"socket", entry.socket_path}};
        std::string state = "-", model = "-", serial = "-";
        try {
            jal::OpenOptions options;
            options.client_name = "jalctl";
            options.emu_dir = dir;
            jal::ChipFunction dev = jal::ChipFunction::open(entry.index, options);
            jal::DeviceStatus s = dev.status();
            state = jal::state_name(s.state);
            if (s.state == jal::DeviceState::ready) {
                jal_identify id = dev.identify();
                model = device_string(id.model);
                serial = device_string(id.serial);
            }
            d["state"] = state;
            d["model"] = s.state == jal::DeviceState::ready ? json(model) : json(nullptr);
            d["serial"] = s.state == jal::DeviceState::ready ? json(serial) : json(nullptr);
        } catch (const jal::Error& e) {
            // One unreachable device must not hide the others.
            state = "unreachable";
            d["state"] = state;
            d["error"] = e.what();
        }
        devices.push_back(d);
        table.add_row({std::to_string(entry.index), entry.socket_path, state, model, serial});
    }
    if (ctx.json) ctx.print_json({{"emu_dir", dir}, {"devices", devices}});
    if (entries.empty()) {
        std::cerr << fmt::format(
            "jalctl: no devices found in {} (is jal-emu running? set JAL_EMU_DIR)\n", dir);
        return kExitFailure;
    }
    if (!ctx.json) table.print(std::cout);
    return kExitOk;
}

}  // namespace

void add_list_command(CLI::App& app, Context& ctx)
{
    CLI::App* sub = app.add_subcommand("list", "List devices: index, socket, state, model, serial");
    add_common_options(*sub, ctx);
    sub->callback([&ctx] {
        ctx.all_mode = Context::AllDevices::self;  // lists every device anyway
        ctx.action = [&ctx] { return run_list(ctx); };
    });
}

}  // namespace jal::ctl
