// What every jalctl subcommand shares: the selected device, the output mode, and how a
// device is opened and awaited.
#pragma once

#include <functional>
#include <iostream>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <jal/chip_function.hpp>

namespace jal::ctl {

struct Context {
    // What `-d all` means for the chosen subcommand (set in its callback).
    enum class AllDevices {
        refused,  // one device only (reset, load, power set)
        each,     // run once per device (--json: {"devices": [...]})
        self,     // the subcommand covers every device itself (dmon)
    };

    unsigned device = 0;
    bool all_devices = false;  // -d all
    AllDevices all_mode = AllDevices::refused;
    bool json = false;
    double boot_wait_s = 10;      // how long to wait for a booting device
    std::string emu_dir;          // --emu-dir; empty: $JAL_EMU_DIR, else the default
    std::function<int()> action;  // set by the chosen subcommand, run after parsing

    // The emulator's socket directory: --emu-dir, else jal::default_emu_dir().
    std::string socket_dir() const;
    jal::ChipFunction open() const;
    // Opens the device and waits (bounded) for it to finish booting. Throws NOT_READY
    // if it is still booting, HW_FAILED if it failed (unless `accept_failed`).
    jal::ChipFunction open_booted(bool accept_failed = false) const;

    // One JSON document on stdout (with -d all, kept for the combined document).
    void print_json(const nlohmann::json& doc) const;
    nlohmann::json* capture = nullptr;
};

// Runs the chosen subcommand on the selected device, or with -d all on each one.
int run_selected(Context& ctx);

// Adds -d/--device, --json, --wait and --emu-dir to `app` (the tool and every subcommand, so each
// --help lists them and they work on either side of the subcommand name).
void add_common_options(CLI::App& app, Context& ctx);

// Each subcommand registers itself here.
void add_list_command(CLI::App& app, Context& ctx);
void add_info_command(CLI::App& app, Context& ctx);
void add_slices_command(CLI::App& app, Context& ctx);
void add_hbm_command(CLI::App& app, Context& ctx);
void add_telemetry_command(CLI::App& app, Context& ctx);
void add_power_command(CLI::App& app, Context& ctx);
void add_log_command(CLI::App& app, Context& ctx);
void add_reset_command(CLI::App& app, Context& ctx);
void add_load_command(CLI::App& app, Context& ctx);
void add_health_command(CLI::App& app, Context& ctx);
void add_fw_command(CLI::App& app, Context& ctx);
void add_ps_command(CLI::App& app, Context& ctx);
void add_dmon_command(CLI::App& app, Context& ctx);
void add_debug_command(CLI::App& app, Context& ctx);
void add_topo_command(CLI::App& app, Context& ctx);

}  // namespace jal::ctl
