// jalctl dmon: one line per device per sample (nvidia-smi dmon style), for watching a
// chip under load or logging to a file: power, temperatures, clock, utilisation, memory,
// the limiter and ECC counts.
#include <atomic>
#include <csignal>
#include <thread>

#include <fmt/format.h>

#include "context.hpp"
#include "exit_codes.hpp"
#include "json_views.hpp"
#include "tools/common/cli_checks.hpp"

namespace jal::ctl {

namespace {

std::atomic<bool> g_stop{false};

void on_signal(int)
{
    g_stop = true;
}

struct DmonOptions {
    double interval_s = 1;
    unsigned count = 0;  // 0: until interrupted
};

constexpr const char* kHeader =
    "# dev  power_w  temp_c  hbm_c  clk_mhz  util%  busy  mem_used_gib  mem%  limiter     "
    "ecc_c  ecc_u";

json sample_json(unsigned device, unsigned sample, const jal_telemetry& t, const jal_usage& u)
{
    const json m = memory_json(u);
    return {{"device", device},
            {"sample", sample},
            {"timestamp_us", t.timestamp_us},
            {"power_w", milli(t.power_mw)},
            {"temp_c", milli(t.temp_junction_mc)},
            {"temp_hbm_c", milli(t.temp_hbm_mc)},
            {"clock_mhz", t.clock_mhz},
            {"utilisation_percent", t.utilisation_pm / 10.0},
            {"slices_busy", t.slices_busy},
            {"memory_used_bytes", m["used_bytes"]},
            {"memory_used_percent", m["used_percent"]},
            {"limiter", jal_limiter_name(t.limiter)},
            {"ecc_corrected", t.ecc_corrected},
            {"ecc_uncorrected", t.ecc_uncorrected}};
}

std::string sample_line(const json& s)
{
    return fmt::format("{:>5}  {:>7.1f}  {:>6.1f}  {:>5.1f}  {:>7}  {:>5.1f}  {:>4}  {:>12.3f}  "
                       "{:>4.1f}  {:<10}  {:>5}  {:>5}",
                       s["device"].get<unsigned>(), s["power_w"].get<double>(),
                       s["temp_c"].get<double>(), s["temp_hbm_c"].get<double>(),
                       s["clock_mhz"].get<unsigned>(), s["utilisation_percent"].get<double>(),
                       s["slices_busy"].get<unsigned>(),
                       s["memory_used_bytes"].get<uint64_t>() / double(1ull << 30),
                       s["memory_used_percent"].get<double>(), s["limiter"].get<std::string>(),
                       s["ecc_corrected"].get<unsigned>(), s["ecc_uncorrected"].get<unsigned>());
}

std::vector<jal::ChipFunction> open_devices(Context& ctx)
{
    std::vector<jal::ChipFunction> devs;
    if (!ctx.all_devices) {
        devs.push_back(ctx.open_booted());
        return devs;
    }
    for (const auto& entry : jal::ChipFunction::enumerate(ctx.socket_dir())) {
        ctx.device = entry.index;
        devs.push_back(ctx.open_booted());
    }
    if (devs.empty())
        throw jal::Error(JAL_STATUS_NO_DEVICE,
                         fmt::format("no devices found in {} (is jal-emu running? set "
                                     "JAL_EMU_DIR)",
                                     ctx.socket_dir()));
    return devs;
}

// Sleeps until `until`, waking early when interrupted.
void wait_until(std::chrono::steady_clock::time_point until)
{
    while (!g_stop && std::chrono::steady_clock::now() < until)
        std::this_thread::sleep_for(std::min<std::chrono::steady_clock::duration>(
            until - std::chrono::steady_clock::now(), std::chrono::milliseconds(50)));
}

int run_dmon(Context& ctx, const DmonOptions& opts)
{
    std::vector<jal::ChipFunction> devs = open_devices(ctx);
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
    if (!ctx.json) std::cout << kHeader << std::endl;
    auto period = std::chrono::microseconds(static_cast<long long>(opts.interval_s * 1e6));
    auto next = std::chrono::steady_clock::now();
    for (unsigned n = 0; !g_stop && (opts.count == 0 || n < opts.count); n++) {
        if (n) wait_until(next);
        if (g_stop) break;
        next += period;
        for (auto& dev : devs) {
            json s = sample_json(dev.index(), n, dev.telemetry(), dev.usage());
            // One line each, flushed, so a pipe or a file sees every sample as it comes.
            std::cout << (ctx.json ? s.dump() : sample_line(s)) << std::endl;
        }
    }
    return kExitOk;
}

}  // namespace

void add_dmon_command(CLI::App& app, Context& ctx)
{
    auto opts = std::make_shared<DmonOptions>();
    CLI::App* sub = app.add_subcommand(
        "dmon",
        "One line per device per sample, like nvidia-smi dmon: power (W), junction and HBM\n"
        "temperature (°C), clock (MHz), utilisation (%), busy slices, memory used (GiB, %),\n"
        "the limiter holding the clock, ECC corrected/uncorrected. Runs until interrupted or\n"
        "--count samples; with --json one JSON object per line. -d all samples every device.");
    add_common_options(*sub, ctx);
    sub->add_option("-i,--interval", opts->interval_s, "Seconds between samples (default 1)")
        ->check(jal::tools::kFinite)
        ->check(CLI::PositiveNumber);
    sub->add_option("-c,--count", opts->count, "Stop after N samples (default: until interrupted)");
    sub->callback([&ctx, opts] {
        ctx.all_mode = Context::AllDevices::self;
        ctx.action = [&ctx, opts] { return run_dmon(ctx, *opts); };
    });
}

}  // namespace jal::ctl
