// jalctl log: the firmware event log, or (--post) the POST trail of the last boot.
#include <atomic>
#include <csignal>
#include <thread>

#include <fmt/format.h>

#include <jal/hw/events.h>

#include "context.hpp"
#include "event_decode.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "table.hpp"
#include "tools/common/cli_checks.hpp"

namespace jal::ctl {

namespace {

struct LogOptions {
    bool post = false;
    uint32_t since = 0;
    bool follow = false;
    double interval_s = 0.5;  // --follow: how often to ask the firmware for news
};

std::atomic<bool> g_stop{false};

void on_signal(int)
{
    g_stop = true;
}

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

// --follow prints rows as they come, so columns have fixed widths rather than a Table's.
std::string follow_line(const jal_log_event& e)
{
    std::string text = device_string(e.text);
    std::string fields = event_fields_text(e);
    if (!fields.empty()) text += ": " + fields;
    return fmt::format("{:>5}  {:>12}  {:<8}  {:<8}  {:>6}  {}", e.seq, seconds(e.timestamp_us),
                       severity_name(e.severity), source_name(e.source), hex(e.code, 4), text);
}

// Prints the events from `since` on, then new ones as the firmware logs them, until
// interrupted. A reset of the chip starts its log over: following goes on from the new
// boot's first event.
int run_follow(Context& ctx, const LogOptions& opts)
{
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    jal::ChipFunction dev = ctx.open_booted(true);
    uint32_t next = opts.since;
    if (!ctx.json)
        std::cout << fmt::format("{:>5}  {:>12}  {:<8}  {:<8}  {:>6}  {}\n", "SEQ", "TIME s",
                                 "SEVERITY", "SOURCE", "CODE", "TEXT")
                  << std::flush;
    auto period = std::chrono::microseconds(static_cast<long long>(opts.interval_s * 1e6));
    while (!g_stop) {
        jal::EventLog log;
        try {
            log = dev.event_log(next);
        } catch (const jal::Error& e) {
            if (e.status() != JAL_STATUS_DEVICE_RESET && e.status() != JAL_STATUS_NOT_READY) throw;
            // The new boot keeps the old one's last events and numbers on from them: carry
            // on from `next` (the check below notices a log that began again).
            std::cerr << fmt::format("jalctl: device {} was reset; following its new boot\n",
                                     ctx.device);
            dev = ctx.open_booted(true);
            continue;
        }
        if (log.next_seq < next) {
            // The log began again (the chip was powered on afresh).
            std::cerr << fmt::format("jalctl: device {} rebooted; following its new log\n",
                                     ctx.device);
            next = 0;
            continue;
        }
        if (log.lost)
            std::cerr << fmt::format("jalctl: {} events were overwritten before they could be "
                                     "read\n",
                                     log.lost);
        for (const auto& e : log.events)
            std::cout << (ctx.json ? event_json(e).dump() : follow_line(e)) << std::endl;
        next = log.next_seq;
        auto until = std::chrono::steady_clock::now() + period;
        while (!g_stop && std::chrono::steady_clock::now() < until)
            std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
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
        "Each event's arguments follow its text, decoded (channel=100 reason=...).\n"
        "--post shows the POST trail of the last boot instead; --follow (-f) keeps printing\n"
        "new events as the firmware logs them until interrupted (--json: one per line).");
    add_common_options(*sub, ctx);
    sub->add_flag("--post", opts->post, "Show the POST trail of the last boot");
    sub->add_option("--since", opts->since, "Only events with this sequence number or later");
    sub->add_flag("-f,--follow", opts->follow, "Keep printing new events until interrupted");
    sub->add_option("--interval", opts->interval_s,
                    "With --follow: seconds between polls of the log (default 0.5)")
        ->check(jal::tools::kFinite)
        ->check(CLI::PositiveNumber);
    sub->callback([&ctx, opts] {
        if (opts->follow && opts->post)
            throw CLI::ValidationError("--follow", "cannot follow the POST trail (--post)");
        if (opts->follow) {
            ctx.action = [&ctx, opts] { return run_follow(ctx, *opts); };
            return;
        }
        ctx.all_mode = Context::AllDevices::each;
        ctx.action = [&ctx, opts] {
            jal::ChipFunction dev = ctx.open_booted(true);
            return opts->post ? run_post(ctx, dev) : run_events(ctx, dev, opts->since);
        };
    });
}

}  // namespace jal::ctl
