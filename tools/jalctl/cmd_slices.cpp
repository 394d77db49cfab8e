// jalctl slices: the slice map (harvesting, self-test, HBM affinity, power gating).
#include <fmt/format.h>

#include "context.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "table.hpp"

namespace jal::ctl {

namespace {

int run_slices(Context& ctx)
{
    jal::ChipFunction dev = ctx.open_booted(true);
    jal_slice_map map = dev.slice_map();
    if (ctx.json) {
        ctx.print_json(slice_map_json(map));
        return kExitOk;
    }
    Table table({{"PHYS", Table::Align::right},
                 {"LOGICAL", Table::Align::right},
                 {"STATE"},
                 {"CHANNELS OK", Table::Align::right},
                 {"GATED"},
                 {"BIST µs", Table::Align::right}});
    for (uint32_t s = 0; s < std::min<uint32_t>(map.num_slices, JAL_NUM_SLICES); s++) {
        const jal_slice_info& info = map.slices[s];
        table.add_row({std::to_string(s),
                       info.logical_id == 0xff ? "-" : std::to_string(info.logical_id),
                       slice_state_name(info.state),
                       fmt::format("{}/{}", info.channels_ok, JAL_HBM_CHANNELS_PER_SLICE),
                       info.power_gated ? "yes" : "no", std::to_string(info.bist_us)});
    }
    table.print(std::cout);
    std::cout << fmt::format("{} of {} slices enabled\n", map.num_enabled, map.num_slices);
    return kExitOk;
}

}  // namespace

void add_slices_command(CLI::App& app, Context& ctx)
{
    CLI::App* sub = app.add_subcommand(
        "slices",
        "Per slice: physical id, logical id, state (enabled, fused, failed self-test, ...),\n"
        "trained HBM channels, power gating.");
    add_common_options(*sub, ctx);
    sub->callback([&ctx] {
        ctx.all_mode = Context::AllDevices::each;
        ctx.action = [&ctx] { return run_slices(ctx); };
    });
}

}  // namespace jal::ctl
