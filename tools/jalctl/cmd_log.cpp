// jalctl log: the firmware event log, or (--post) the POST trail of the last boot.
#include <fmt/format.h>

#include <jal/hw/events.h>

#include "context.hpp"
#include "event_decode.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "table.hpp"

namespace jal::ctl {

namespace {

struct LogOptions {
    bool post = false;
    uint32_t since = 0;
};

std::string seconds(uint64_t us)
{
    return fmt::format("{}.{:06}", us / 1000000, us % 1000000);
}

int run_events(Context& ctx, jal::ChipFunction& dev, uint32_t since)
{
    jal::EventLog log = dev.event_log(since);
    if (ctx.json) {
        json events = json::array();
        for (const auto& e : log.events) events.push_back(event_json(e));
        ctx.print_json({{"next_seq", log.next_seq}, {"lost", log.lost}, {"events", events}});
        return kExitOk;
    }
    Table table({{"SEQ", Table::Align::right},
                 {"TIME s", Table::Align::right},
                 {"SEVERITY"},
                 {"SOURCE"},
                 {"CODE", Table::Align::right},
                 {"TEXT"}});
    for (const auto& e : log.events) {
        std::string text = device_string(e.text);
        std::string fields = event_fields_text(e);
        if (!fields.empty()) text += ": " + fields;
        table.add_row({std::to_string(e.seq), seconds(e.timestamp_us), severity_name(e.severity),
                       source_name(e.source), hex(e.code, 4), text});
    }
    table.print(std::cout);
    if (log.lost)
        std::cout << fmt::format("({} older events were overwritten before they could be read)\n",
                                 log.lost);
    return kExitOk;
}

int run_post(Context& ctx, jal::ChipFunction& dev)
{
    jal::PostTrail trail = dev.post_trail();
    if (ctx.json) {
        json entries = json::array();
        for (const auto& p : trail.entries) entries.push_back(post_entry_json(p));
        ctx.print_json({{"lost", trail.lost}, {"entries", entries}});
        return kExitOk;
    }
    Table table({{"STEP", Table::Align::right},
                 {"POST CODE"},
                 {"NAME"},
                 {"TIME s", Table::Align::right},
                 {"STATUS"}});
    for (const auto& p : trail.entries)
        table.add_row({std::to_string(p.step), hex(p.post_code, 4), jal_post_step_name(p.post_code),
                       seconds(p.timestamp_us), jal_status_name(p.status)});
    table.print(std::cout);
    return kExitOk;
}

}  // namespace

void add_log_command(CLI::App& app, Context& ctx)
{
    auto opts = std::make_shared<LogOptions>();
    CLI::App* sub = app.add_subcommand(
        "log",
        "Firmware event log: sequence number, time since power-on, severity, source, code, text.\n"
        "--post shows the POST trail of the last boot instead.");
    add_common_options(*sub, ctx);
    sub->add_flag("--post", opts->post, "Show the POST trail of the last boot");
    sub->add_option("--since", opts->since, "Only events with this sequence number or later");
    sub->callback([&ctx, opts] {
        ctx.all_mode = Context::AllDevices::each;
        ctx.action = [&ctx, opts] {
            jal::ChipFunction dev = ctx.open_booted(true);
            return opts->post ? run_post(ctx, dev) : run_events(ctx, dev, opts->since);
        };
    });
}

}  // namespace jal::ctl
