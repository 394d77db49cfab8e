// jalctl telemetry: power, current, voltage, temperature, clock and limiter state.
#include <atomic>
#include <csignal>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "context.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "table.hpp"
#include "tools/common/cli_checks.hpp"

namespace jal::ctl {

namespace {

std::atomic<bool> g_interrupted{false};

void on_interrupt(int)
{
    g_interrupted = true;
}

struct TelemetryOptions {
    double watch_s = 0;  // 0: one sample
    unsigned count = 0;  // 0: until interrupted
};

struct Sample {
    jal_telemetry t;
    std::optional<jal_usage> usage;  // none from firmware before interface 1.6
};

Sample take_sample(jal::ChipFunction& dev)
{
    Sample s{dev.telemetry(), std::nullopt};
    try {
        s.usage = dev.usage();
    } catch (const jal::Error& e) {
        if (e.status() != JAL_STATUS_INVALID_OPCODE) throw;
    }
    return s;
}

json sample_json(const Sample& s)
{
    json j = telemetry_json(s.t);
    j["memory"] = s.usage ? memory_json(*s.usage) : json(nullptr);
    return j;
}

void print_table(const Sample& s)
{
    const jal_telemetry& t = s.t;
    KeyValueList out;
    out.add("Power", fmt::format("{:.1f} W (average {:.1f} W, limit {:.1f} W)", milli(t.power_mw),
                                 milli(t.power_avg_mw), milli(t.power_limit_mw)));
    for (uint32_t r = 0; r < JAL_RAIL_COUNT; r++)
        out.add(fmt::format("Rail {}", rail_name(r)),
                fmt::format("{:.3f} A at {:.3f} V", milli(t.rail_current_ma[r]),
                            milli(t.rail_voltage_mv[r])));
    out.add("Core current limit", fmt::format("{:.1f} A", milli(t.current_limit_ma)));
    out.add("Temperature",
            fmt::format("junction {:.1f} °C, HBM {:.1f} °C, ambient {:.1f} °C (limit {:.1f} °C)",
                        milli(t.temp_junction_mc), milli(t.temp_hbm_mc), milli(t.temp_ambient_mc),
                        milli(t.temp_limit_mc)));
    out.add("Clock",
            fmt::format("{} MHz (target {}, range {}-{}) at {:.3f} V", t.clock_mhz,
                        t.clock_target_mhz, t.clock_min_mhz, t.clock_max_mhz, milli(t.voltage_mv)));
    out.add("Utilisation", fmt::format("{:.1f}% ({} slices busy, {} powered)",
                                       t.utilisation_pm / 10.0, t.slices_busy, t.slices_powered));
    if (s.usage) {
        const json m = memory_json(*s.usage);
        out.add("Memory", fmt::format("{} used of {} ({:.1f}%), {} free",
                                      bytes_text(m["used_bytes"].get<uint64_t>()),
                                      bytes_text(m["total_bytes"].get<uint64_t>()),
                                      m["used_percent"].get<double>(),
                                      bytes_text(m["free_bytes"].get<uint64_t>())));
    }
    out.add("Limiter", jal_limiter_name(t.limiter));
    std::string residency;
    for (uint32_t l = 0; l < JAL_LIMITER_COUNT; l++)
        residency += fmt::format("{}{} {:.3f} s", l ? ", " : "", jal_limiter_name(l),
                                 t.limiter_residency_ms[l] / 1000.0);
    out.add("Limiter residency", residency);
    out.add("Throttle events",
            fmt::format("{} (emergency {})", t.throttle_events, t.emergency_events));
    out.add("Energy", fmt::format("{:.3f} J", t.energy_uj / 1e6));
    out.add("Uptime", fmt::format("{:.3f} s", t.uptime_us / 1e6));
    out.add("ECC", fmt::format("{} corrected, {} uncorrected; {} pages retired", t.ecc_corrected,
                               t.ecc_uncorrected, t.retired_pages));
    out.add("Fabric links",
            fmt::format("{} of {} up ({} degraded), {} errors, {} retrains", t.links_up,
                        t.links_connected, t.links_degraded, t.link_errors, t.link_retrains));
    out.add("Admin commands", std::to_string(t.admin_commands));
    out.add("Watchdog resets", std::to_string(t.watchdog_resets));
    out.print(std::cout);
}

int run_telemetry(Context& ctx, const TelemetryOptions& opts)
{
    jal::ChipFunction dev = ctx.open_booted();
    if (opts.watch_s <= 0) {
        Sample s = take_sample(dev);
        if (ctx.json)
            ctx.print_json(sample_json(s));
        else
            print_table(s);
        return kExitOk;
    }
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
    auto period = std::chrono::milliseconds(static_cast<long long>(opts.watch_s * 1000));
    auto next = std::chrono::steady_clock::now();
    for (unsigned n = 0; !g_interrupted && (opts.count == 0 || n < opts.count); n++) {
        Sample s = take_sample(dev);
        if (ctx.json) {
            std::cout << sample_json(s).dump() << std::endl;  // one document per line
        } else {
            if (n) std::cout << '\n';
            print_table(s);
            std::cout.flush();
        }
        next += period;
        while (!g_interrupted && std::chrono::steady_clock::now() < next &&
               !(opts.count && n + 1 >= opts.count))
            std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
                next - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
    }
    return kExitOk;
}

}  // namespace

void add_telemetry_command(CLI::App& app, Context& ctx)
{
    auto opts = std::make_shared<TelemetryOptions>();
    CLI::App* sub = app.add_subcommand(
        "telemetry",
        "Power (W), rail currents (A) and voltages (V), temperatures (°C), clock and the\n"
        "limiter holding it. --watch repeats every SECONDS until interrupted (with --json,\n"
        "one JSON document per line).");
    add_common_options(*sub, ctx);
    sub->add_option("-w,--watch", opts->watch_s, "Repeat every SECONDS")
        ->check(jal::tools::kFinite)
        ->check(CLI::PositiveNumber);
    sub->add_option("-n,--count", opts->count, "With --watch: stop after N samples");
    sub->callback([&ctx, opts] {
        // Watching several devices in turn would never get past the first: use dmon.
        if (opts->watch_s <= 0) ctx.all_mode = Context::AllDevices::each;
        ctx.action = [&ctx, opts] { return run_telemetry(ctx, *opts); };
    });
}

}  // namespace jal::ctl
