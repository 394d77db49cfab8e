// jalctl power get | set WATTS: the package power limit.
#include <cmath>

#include <fmt/format.h>

#include "context.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"

namespace jal::ctl {

namespace {

int run_get(Context& ctx)
{
    jal::ChipFunction dev = ctx.open_booted();
    jal_identify id = dev.identify();
    uint32_t limit = dev.power_limit_mw();
    if (ctx.json) {
        ctx.print_json({{"power_limit_w", milli(limit)},
                        {"power_limit_min_w", milli(id.power_limit_min_mw)},
                        {"power_limit_max_w", milli(id.power_limit_max_mw)},
                        {"tdp_w", milli(id.tdp_mw)}});
        return kExitOk;
    }
    std::cout << fmt::format("power limit: {:.1f} W (range {:.0f}-{:.0f} W, TDP {:.0f} W)\n",
                             milli(limit), milli(id.power_limit_min_mw),
                             milli(id.power_limit_max_mw), milli(id.tdp_mw));
    return kExitOk;
}

int run_set(Context& ctx, double watts)
{
    jal::ChipFunction dev = ctx.open_booted();
    jal_identify id = dev.identify();
    double min_w = milli(id.power_limit_min_mw), max_w = milli(id.power_limit_max_mw);
    if (!(watts >= min_w && watts <= max_w))
        throw jal::Error(
            JAL_STATUS_INVALID_FIELD,
            fmt::format("device {}: power limit {} W outside the allowed {:.0f}-{:.0f} W",
                        dev.index(), watts, min_w, max_w));
    auto requested = static_cast<uint32_t>(std::llround(watts * 1000));
    uint32_t in_force = dev.set_power_limit_mw(requested);
    if (ctx.json) {
        ctx.print_json({{"requested_w", milli(requested)}, {"power_limit_w", milli(in_force)}});
        return kExitOk;
    }
    std::cout << fmt::format("power limit set to {:.1f} W", milli(in_force));
    if (in_force != requested)
        std::cout << fmt::format(" (requested {:.3f} W; the device adjusted it)", milli(requested));
    std::cout << '\n';
    return kExitOk;
}

}  // namespace

void add_power_command(CLI::App& app, Context& ctx)
{
    CLI::App* sub = app.add_subcommand("power", "Show or set the package power limit");
    add_common_options(*sub, ctx);
    sub->require_subcommand(0, 1);

    CLI::App* get =
        sub->add_subcommand("get", "Show the power limit in force and its allowed range");
    add_common_options(*get, ctx);
    get->callback([&ctx] {
        ctx.all_mode = Context::AllDevices::each;
        ctx.action = [&ctx] { return run_get(ctx); };
    });

    auto watts = std::make_shared<double>(0);
    CLI::App* set = sub->add_subcommand(
        "set", "Set the power limit (watts, within the range `power get` shows)");
    add_common_options(*set, ctx);
    set->add_option("WATTS", *watts, "New limit in watts")->required();
    set->callback([&ctx, watts] { ctx.action = [&ctx, watts] { return run_set(ctx, *watts); }; });

    // Plain `jalctl power` means `power get`.
    sub->callback([&ctx] {
        if (ctx.action) return;
        ctx.all_mode = Context::AllDevices::each;
        ctx.action = [&ctx] { return run_get(ctx); };
    });
}

}  // namespace jal::ctl
