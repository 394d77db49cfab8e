// jalctl reset: reset the chip and wait, bounded and visibly, for it to come back.
#include <fmt/format.h>

#include "context.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"

namespace jal::ctl {

namespace {

struct ResetOptions {
    double timeout_s = 30;
    bool admin = false;
};

int run_reset(Context& ctx, const ResetOptions& opts)
{
    jal::ChipFunction dev = ctx.open();
    // Progress goes to stderr under --json so stdout stays one document.
    std::ostream& progress_out = ctx.json ? std::cerr : std::cout;
    auto timeout = std::chrono::milliseconds(static_cast<long long>(opts.timeout_s * 1000));
    progress_out << fmt::format("device {}: resetting ({}), waiting up to {} s\n", dev.index(),
                                opts.admin ? "admin RESET command" : "reset register",
                                opts.timeout_s)
                 << std::flush;
    jal::ResetOutcome out = dev.reset(
        opts.admin ? jal::ResetMethod::admin_command : jal::ResetMethod::reset_register, timeout,
        [&](const jal::ResetProgress& p) {
            progress_out << fmt::format("  {:6.2f} s  {:<9}  boot step {:>2}  POST {}\n",
                                        p.elapsed.count() / 1000.0, jal::state_name(p.status.state),
                                        p.status.boot_step, hex(p.status.post_code, 4))
                         << std::flush;
        });

    double elapsed = out.elapsed.count() / 1000.0;
    std::string verdict;
    if (!out.reset_observed)
        verdict =
            fmt::format("reset requested but the device never went down (still {}) within {} s",
                        jal::state_name(out.status.state), opts.timeout_s);
    else if (out.came_back)
        verdict = fmt::format("reset complete: ready after {:.2f} s{}", elapsed,
                              out.status.degraded ? " (degraded)" : "");
    else if (out.status.state == jal::DeviceState::failed)
        verdict = fmt::format(
            "reset done but the chip failed to boot after {:.2f} s (fault: {}, POST code {})",
            elapsed, jal_status_name(out.status.fault), hex(out.status.post_code, 4));
    else
        verdict = fmt::format(
            "device did not come back within {} s (still {}, boot step {}, POST code {})",
            opts.timeout_s, jal::state_name(out.status.state), out.status.boot_step,
            hex(out.status.post_code, 4));

    if (ctx.json) {
        json j = status_json(out.status);
        j["device"] = dev.index();
        j["reset_observed"] = out.reset_observed;
        j["came_back"] = out.came_back;
        j["elapsed_s"] = elapsed;
        j["message"] = verdict;
        ctx.print_json(j);
    } else {
        std::cout << fmt::format("device {}: {}\n", dev.index(), verdict);
    }
    return out.came_back ? kExitOk : kExitFailure;
}

}  // namespace

void add_reset_command(CLI::App& app, Context& ctx)
{
    auto opts = std::make_shared<ResetOptions>();
    CLI::App* sub = app.add_subcommand(
        "reset",
        "Reset the chip (firmware reboots; all queues and contexts are lost) and wait for it\n"
        "to boot again, printing progress. Exits 0 only if the device was seen going down\n"
        "and coming back READY within --timeout.");
    add_common_options(*sub, ctx);
    sub->add_option("-t,--timeout", opts->timeout_s,
                    "Seconds to wait for the device to come back (default 30)")
        ->check(CLI::PositiveNumber);
    sub->add_flag("--admin", opts->admin,
                  "Reset with the admin RESET command instead of the reset register");
    sub->callback([&ctx, opts] { ctx.action = [&ctx, opts] { return run_reset(ctx, *opts); }; });
}

}  // namespace jal::ctl
