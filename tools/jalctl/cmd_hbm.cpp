// jalctl hbm: HBM training results, per channel or (--channel N) per lane.
#include <fmt/format.h>

#include <jal/hw/chip.h>

#include "context.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "table.hpp"

namespace jal::ctl {

namespace {

std::string or_dash(const json& v)
{
    return v.is_null() ? "-" : v.dump();
}

int run_channels(Context& ctx, jal::ChipFunction& dev)
{
    jal::HbmReport report = dev.hbm_report(0, JAL_HBM_CHANNELS);
    json channels = json::array();
    for (size_t i = 0; i < report.channels.size(); i++)
        channels.push_back(hbm_channel_json(report.header.first_channel + i, report.channels[i]));
    if (ctx.json) {
        ctx.print_json({{"channels_ok", report.header.channels_ok},
                        {"channels_failed", report.header.channels_failed},
                        {"stacks_failed_mask", hex(report.header.stacks_failed_mask)},
                        {"channels", channels}});
        return kExitOk;
    }
    Table table({{"CH", Table::Align::right},
                 {"STACK", Table::Align::right},
                 {"SLICE", Table::Align::right},
                 {"STATUS"},
                 {"VREF", Table::Align::right},
                 {"DEAD", Table::Align::right},
                 {"REPAIRS"},
                 {"RD MARGIN", Table::Align::right},
                 {"WR MARGIN", Table::Align::right},
                 {"MEMTEST ERR", Table::Align::right},
                 {"ECC CORR", Table::Align::right},
                 {"ECC UNCORR", Table::Align::right},
                 {"RETIRED", Table::Align::right},
                 {"TRAIN µs", Table::Align::right}});
    for (const json& c : channels) {
        std::string repairs;
        for (const json& r : c["repairs"])
            repairs += fmt::format("{}{}->s{}", repairs.empty() ? "" : ",", r["dq_lane"].get<int>(),
                                   r["spare"].get<int>());
        table.add_row({c["channel"].dump(), c["stack"].dump(), c["slice"].dump(),
                       c["status"].get<std::string>(), c["vref"].dump(), c["dead_lanes"].dump(),
                       repairs.empty() ? "-" : repairs, or_dash(c["min_read_margin"]),
                       or_dash(c["min_write_margin"]), c["memtest_errors"].dump(),
                       c["ecc_corrected"].dump(), c["ecc_uncorrected"].dump(),
                       c["retired_pages"].dump(), c["training_us"].dump()});
    }
    table.print(std::cout);
    uint64_t corrected = 0, uncorrected = 0, retired = 0;
    for (const auto& r : report.channels) {
        corrected += r.ecc_corrected;
        uncorrected += r.ecc_uncorrected;
        retired += r.retired_pages;
    }
    std::cout << fmt::format("{} channels ok, {} failed, failed stacks mask {}; ECC {} corrected, "
                             "{} uncorrected, {} pages retired\n",
                             report.header.channels_ok, report.header.channels_failed,
                             hex(report.header.stacks_failed_mask), corrected, uncorrected,
                             retired);
    return kExitOk;
}

int run_lanes(Context& ctx, jal::ChipFunction& dev, uint32_t channel)
{
    jal::HbmReport report = dev.hbm_report(channel, 1);
    if (report.channels.empty())
        throw jal::Error(
            JAL_STATUS_OUT_OF_RANGE,
            fmt::format("device {}: no report for HBM channel {}", dev.index(), channel));
    const jal_hbm_channel_report& r = report.channels.front();
    json lanes = json::array();
    for (uint32_t l = 0; l < JAL_HBM_LANES; l++) lanes.push_back(hbm_lane_json(l, r.lanes[l]));
    json summary = hbm_channel_json(channel, r);
    if (ctx.json) {
        summary["lanes"] = lanes;
        ctx.print_json(summary);
        return kExitOk;
    }
    std::cout << fmt::format("channel {} (stack {}, slice {}): {}, vref {}, {} dead lanes\n",
                             channel, r.stack, jal_slice_of_channel(channel),
                             hbm_channel_status_name(r.status), r.vref, r.dead_lanes);
    Table table({{"LANE", Table::Align::right},
                 {"ROLE"},
                 {"FLAGS"},
                 {"RD DELAY", Table::Align::right},
                 {"RD WIDTH", Table::Align::right},
                 {"RD MARGIN", Table::Align::right},
                 {"WR DELAY", Table::Align::right},
                 {"WR WIDTH", Table::Align::right},
                 {"WR MARGIN", Table::Align::right}});
    for (uint32_t l = 0; l < JAL_HBM_LANES; l++) {
        const jal_hbm_lane_report& lane = r.lanes[l];
        std::string flags;
        auto flag = [&](bool on, const char* name) {
            if (on) flags += flags.empty() ? name : std::string(",") + name;
        };
        flag(lane.flags & JAL_HBM_LANE_IN_USE, "in_use");
        flag(lane.flags & JAL_HBM_LANE_DEAD, "dead");
        flag(lane.flags & JAL_HBM_LANE_NOEYE, "no_eye");
        table.add_row({std::to_string(l), (lane.flags & JAL_HBM_LANE_SPARE) ? "spare" : "dq",
                       flags.empty() ? "-" : flags, std::to_string(lane.read_delay),
                       std::to_string(lane.read_width), std::to_string(lane.read_margin),
                       std::to_string(lane.write_delay), std::to_string(lane.write_width),
                       std::to_string(lane.write_margin)});
    }
    table.print(std::cout);
    return kExitOk;
}

}  // namespace

void add_hbm_command(CLI::App& app, Context& ctx)
{
    auto channel = std::make_shared<std::optional<uint32_t>>();
    CLI::App* sub = app.add_subcommand(
        "hbm",
        "HBM training report: per channel status, Vref, dead lanes, spare repairs, eye margins\n"
        "(delay taps), memtest errors. --channel N shows every lane of one channel.");
    add_common_options(*sub, ctx);
    sub->add_option("-c,--channel", *channel, "Show per-lane detail of this channel")
        ->check(CLI::Range(0u, JAL_HBM_CHANNELS - 1u));
    sub->callback([&ctx, channel] {
        ctx.all_mode = Context::AllDevices::each;
        ctx.action = [&ctx, channel] {
            jal::ChipFunction dev = ctx.open_booted(true);
            return *channel ? run_lanes(ctx, dev, **channel) : run_channels(ctx, dev);
        };
    });
}

}  // namespace jal::ctl
