// jalctl power get | set WATTS [--persist] | clear: the package power limit, and the one
// every boot starts with.
#include <cmath>
#include <optional>

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
    std::optional<uint32_t> saved;
    try {
        saved = dev.persistent_power_limit_mw();
    } catch (const jal::Error& e) {
        if (e.status() != JAL_STATUS_INVALID_FIELD) throw;  // firmware before interface 1.6
    }
    if (ctx.json) {
        ctx.print_json({{"power_limit_w", milli(limit)},
                        {"power_limit_min_w", milli(id.power_limit_min_mw)},
                        {"power_limit_max_w", milli(id.power_limit_max_mw)},
                        {"tdp_w", milli(id.tdp_mw)},
                        {"persistent_limit_w", saved && *saved ? json(milli(*saved)) : json()}});
        return kExitOk;
    }
    std::cout << fmt::format("power limit: {:.1f} W (range {:.0f}-{:.0f} W, TDP {:.0f} W)\n",
                             milli(limit), milli(id.power_limit_min_mw),
                             milli(id.power_limit_max_mw), milli(id.tdp_mw));
    if (saved)
        std::cout << (*saved ? fmt::format("persistent limit: {:.1f} W (applied at every boot)\n",
                                           milli(*saved))
                             : "persistent limit: none (boots start at the TDP)\n");
    return kExitOk;
}

int run_set(Context& ctx, double watts, bool persist)
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
    uint32_t in_force =
        persist ? dev.set_persistent_power_limit_mw(requested) : dev.set_power_limit_mw(requested);
    if (ctx.json) {
        ctx.print_json({{"requested_w", milli(requested)},
                        {"power_limit_w", milli(in_force)},
                        {"persistent", persist}});
        return kExitOk;
    }
    std::cout << fmt::format("power limit set to {:.1f} W{}", milli(in_force),
                             persist ? ", kept across resets" : "");
    if (in_force != requested)
        std::cout << fmt::format(" (requested {:.3f} W; the device adjusted it)", milli(requested));
    std::cout << '\n';
    return kExitOk;
}

int run_clear(Context& ctx)
{
    jal::ChipFunction dev = ctx.open_booted();
    (void)dev.set_persistent_power_limit_mw(0);
    uint32_t limit = dev.power_limit_mw();
    if (ctx.json) {
        ctx.print_json({{"persistent_limit_w", nullptr}, {"power_limit_w", milli(limit)}});
        return kExitOk;
    }
    std::cout << fmt::format("persistent power limit cleared: the next boot starts at the TDP "
                             "(the limit in force stays {:.1f} W)\n",
                             milli(limit));
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
    auto persist = std::make_shared<bool>(false);
    CLI::App* set = sub->add_subcommand(
        "set",
        "Set the power limit (watts, within the range `power get` shows). Below the present\n"
        "draw the clock ramps down to it. --persist also keeps it across resets (every boot\n"
        "starts with it, until `power clear`); without, a reset returns to the persistent\n"
        "limit or the TDP.");
    add_common_options(*set, ctx);
    set->add_option("WATTS", *watts, "New limit in watts")->required();
    set->add_flag("--persist", *persist, "Keep the limit across resets");
    set->callback([&ctx, watts, persist] {
        ctx.action = [&ctx, watts, persist] { return run_set(ctx, *watts, *persist); };
    });

    CLI::App* clear =
        sub->add_subcommand("clear", "Forget the persistent limit: boots start at the TDP again");
    add_common_options(*clear, ctx);
    clear->callback([&ctx] { ctx.action = [&ctx] { return run_clear(ctx); }; });

    // Plain `jalctl power` means `power get`.
    sub->callback([&ctx] {
        if (ctx.action) return;
        ctx.all_mode = Context::AllDevices::each;
        ctx.action = [&ctx] { return run_get(ctx); };
    });
}

}  // namespace jal::ctl
