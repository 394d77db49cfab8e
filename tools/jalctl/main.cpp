// jalctl: device management for Jalapeño chips. One client of libjal's jal::ChipFunction.
#include <iostream>

#include <CLI/CLI.hpp>

#include <jal/error.hpp>

#include "tools/common/version.hpp"

#include "context.hpp"
#include "exit_codes.hpp"

int main(int argc, char** argv)
{
    jal::ctl::Context ctx;
    CLI::App app{"jalctl: inspect and manage Jalapeño devices.\n"
                 "Devices are found in $JAL_EMU_DIR (default $XDG_RUNTIME_DIR/jal-emu or "
                 "/tmp/jal-emu-<uid>)."};
    app.set_version_flag("--version", jal::tools::version_text("jalctl"));
    app.require_subcommand(1);
    jal::ctl::add_common_options(app, ctx);
    jal::ctl::add_list_command(app, ctx);
    jal::ctl::add_info_command(app, ctx);
    jal::ctl::add_health_command(app, ctx);
    jal::ctl::add_slices_command(app, ctx);
    jal::ctl::add_hbm_command(app, ctx);
    jal::ctl::add_telemetry_command(app, ctx);
    jal::ctl::add_power_command(app, ctx);
    jal::ctl::add_log_command(app, ctx);
    jal::ctl::add_reset_command(app, ctx);
    jal::ctl::add_load_command(app, ctx);
    jal::ctl::add_fw_command(app, ctx);
    jal::ctl::add_ps_command(app, ctx);
    jal::ctl::add_dmon_command(app, ctx);
    jal::ctl::add_debug_command(app, ctx);
    jal::ctl::add_topo_command(app, ctx);

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? 0 : jal::ctl::kExitUsage;
    }

    try {
        return jal::ctl::run_selected(ctx);
    } catch (const jal::Error& e) {
        std::cerr << "jalctl: " << e.what() << '\n';
        if (ctx.json) ctx.print_json({{"error", e.what()}, {"status", e.status_name()}});
        return jal::ctl::kExitFailure;
    } catch (const std::exception& e) {
        std::cerr << "jalctl: internal error: " << e.what() << '\n';
        if (ctx.json) ctx.print_json({{"error", e.what()}, {"status", "internal"}});
        return jal::ctl::kExitFailure;
    }
}
