// jalctl health: is the device fit for work? Exit status 0 healthy, 4 degraded, 5 failed
// (exit_codes.hpp; docs/jalctl.md), for scripts and monitoring.
#include <fmt/format.h>

#include "context.hpp"
#include "event_decode.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "table.hpp"

namespace jal::ctl {

namespace {

struct Check {
    std::string name;
    int verdict = kExitOk;  // kExitOk, kExitDegraded or kExitFailed
    std::string detail;
};

Check state_check(const jal::DeviceStatus& s)
{
    Check c{"state", kExitOk, jal::state_name(s.state)};
    if (s.state == jal::DeviceState::failed) {
        c.verdict = kExitFailed;
        c.detail = fmt::format("failed: {} (boot step {}, POST code {})", jal_status_name(s.fault),
                               s.boot_step, post_code_text(s.post_code));
    } else if (s.state != jal::DeviceState::ready) {
        c.verdict = kExitFailed;
        c.detail = fmt::format("not ready after the wait: {} (boot step {})",
                               jal::state_name(s.state), s.boot_step);
    } else if (s.degraded) {
        c.verdict = kExitDegraded;
        c.detail = "ready, degraded (the firmware flags lost capacity)";
    }
    return c;
}

// What identify and telemetry say of a ready chip: capacity lost since manufacturing
// (failed channels; slices that failed self-test beyond the fused ones are flagged by the
// firmware as degraded), and the junction at its limit.
std::vector<Check> ready_checks(jal::ChipFunction& dev)
{
    const jal_identify id = dev.identify();
    const jal_telemetry t = dev.telemetry();
    std::vector<Check> out;
    Check hbm{"hbm", kExitOk,
              fmt::format("{} of {} channels ok", id.hbm_channels_ok, id.hbm_channels_total)};
    if (id.hbm_channels_ok < id.hbm_channels_total) hbm.verdict = kExitDegraded;
    out.push_back(hbm);
    out.push_back(
        {"slices", kExitOk, fmt::format("{} of {} enabled", id.slices_enabled, id.slices_total)});
    Check thermal{"thermal", kExitOk,
                  fmt::format("junction {:.1f} °C, limit {:.1f} °C", t.temp_junction_mc / 1000.0,
                              t.temp_limit_mc / 1000.0)};
    if (t.temp_junction_mc >= t.temp_limit_mc) thermal.verdict = kExitDegraded;
    out.push_back(thermal);
    return out;
}

const char* verdict_name(int v)
{
    return v == kExitOk ? "healthy" : v == kExitDegraded ? "degraded" : "failed";
}

int run_health(Context& ctx)
{
    jal::ChipFunction dev = ctx.open();
    auto wait = std::chrono::milliseconds(static_cast<long long>(ctx.boot_wait_s * 1000));
    const jal::DeviceStatus status = dev.wait_ready(wait);
    std::vector<Check> checks = {state_check(status)};
    if (status.state == jal::DeviceState::ready)
        for (Check& c : ready_checks(dev)) checks.push_back(std::move(c));
    int verdict = kExitOk;
    for (const Check& c : checks) verdict = std::max(verdict, c.verdict);
    if (ctx.json) {
        json j = {
            {"device", dev.index()}, {"health", verdict_name(verdict)}, {"exit_code", verdict}};
        for (const Check& c : checks)
            j["checks"].push_back(
                {{"check", c.name}, {"status", verdict_name(c.verdict)}, {"detail", c.detail}});
        ctx.print_json(j);
        return verdict;
    }
    std::cout << fmt::format("device {}: {}\n", dev.index(), verdict_name(verdict));
    KeyValueList out;
    for (const Check& c : checks)
        out.add(c.name, c.verdict == kExitOk
                            ? c.detail
                            : fmt::format("{}: {}", verdict_name(c.verdict), c.detail));
    out.print(std::cout);
    return verdict;
}

}  // namespace

void add_health_command(CLI::App& app, Context& ctx)
{
    CLI::App* sub = app.add_subcommand(
        "health",
        "Whether a device is fit for work: its state, HBM channels, slices and junction "
        "temperature.\nExit status: 0 healthy, 4 degraded (ready with lost capacity or at "
        "its thermal limit), 5 failed (or not ready after --wait), 1 could not check.");
    add_common_options(*sub, ctx);
    sub->callback([&ctx] {
        ctx.all_mode = Context::AllDevices::each;
        ctx.action = [&ctx] { return run_health(ctx); };
    });
}

}  // namespace jal::ctl
