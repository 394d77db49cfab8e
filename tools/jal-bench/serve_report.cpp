#include "serve_report.hpp"

#include <fmt/format.h>

namespace jal::bench {

namespace {

nlohmann::json dist_json(const Distribution& d)
{
    return {{"mean", d.mean}, {"median", d.median}, {"p90", d.p90}, {"p99", d.p99}};
}

}  // namespace

nlohmann::json point_json(const PointFigures& f)
{
    nlohmann::json j = {{"concurrency", f.concurrency},
                        {"completed", f.completed},
                        {"failed", f.failed},
                        {"input_tokens", f.input_tokens},
                        {"output_tokens", f.output_tokens},
                        {"duration_s", f.duration_s},
                        {"ttft_ms", dist_json(f.ttft_ms)},
                        {"tpot_ms", dist_json(f.tpot_ms)},
                        {"itl_ms", dist_json(f.itl_ms)},
                        {"e2e_ms", dist_json(f.e2e_ms)},
                        {"request_throughput", f.request_s},
                        {"output_tok_s", f.output_tok_s},
                        {"mixed_tok_s", f.mixed_tok_s},
                        {"tok_s_user", f.tok_s_user},
                        {"rated_power_w", kRatedPowerW},
                        {"mixed_tok_s_per_kw_rated", f.mixed_tok_s_per_kw_rated}};
    if (!f.chip.known) {
        j["chip"] = nullptr;
        return j;
    }
    j["avg_power_w"] = f.avg_power_w;
    j["mixed_tok_s_per_kw_modelled"] = f.mixed_tok_s_per_kw_modelled;
    j["chip"] = {{"modelled_s", f.chip.modelled_s},
                 {"energy_j", f.chip.energy_j},
                 {"avg_power_w", f.avg_power_w},
                 {"mixed_tok_s", f.chip_mixed_tok_s},
                 {"mixed_tok_s_per_kw_rated", f.chip_mixed_tok_s_per_kw_rated},
                 {"mixed_tok_s_per_kw_modelled", f.chip_mixed_tok_s_per_kw_modelled}};
    return j;
}

std::string serve_table(const nlohmann::json& doc)
{
    const nlohmann::json& w = doc["workload"];
    std::string out =
        fmt::format("{} ({} time): {}–{} in, {}–{} out (range ratio {}), greedy, ignore_eos\n",
                    doc["target"].value("url", doc["target"].value("shape", std::string())),
                    doc["target"].value("time_base", std::string()), w.value("min_input_len", 0u),
                    w.value("input_len", 0u), w.value("min_output_len", 0u),
                    w.value("output_len", 0u), w.value("range_ratio", 1.0));
    out += fmt::format("{:>4} {:>5} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10} {:>10} "
                       "{:>8} {:>10} {:>10}\n",
                       "C", "reqs", "TTFT ms", "p99", "TPOT ms", "p99", "ITL ms", "E2E ms", "req/s",
                       "out tok/s", "mixed t/s", "t/s/user", "/kW rated", "/kW model");
    for (const nlohmann::json& p : doc["points"])
        out +=
            fmt::format("{:>4} {:>5} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.3f} {:>9.1f} "
                        "{:>9.3f} {:>10.1f} {:>10.1f} {:>8.1f} {:>10.1f} {:>10}\n",
                        p["concurrency"].get<unsigned>(), p["completed"].get<unsigned>(),
                        p["ttft_ms"]["mean"].get<double>(), p["ttft_ms"]["p99"].get<double>(),
                        p["tpot_ms"]["mean"].get<double>(), p["tpot_ms"]["p99"].get<double>(),
                        p["itl_ms"]["mean"].get<double>(), p["e2e_ms"]["mean"].get<double>(),
                        p["request_throughput"].get<double>(), p["output_tok_s"].get<double>(),
                        p["mixed_tok_s"].get<double>(), p["tok_s_user"].get<double>(),
                        p["mixed_tok_s_per_kw_rated"].get<double>(),
                        p.contains("mixed_tok_s_per_kw_modelled")
                            ? fmt::format("{:.1f}", p["mixed_tok_s_per_kw_modelled"].get<double>())
                            : std::string("-"));
    return out;
}

std::string serve_plot(const nlohmann::json& doc)
{
    std::vector<PlotPoint> points;
    for (const nlohmann::json& p : doc["points"])
        points.push_back({p["tok_s_user"].get<double>(),
                          p["mixed_tok_s_per_kw_rated"].get<double>(),
                          fmt::format("C={}", p["concurrency"].get<unsigned>())});
    const std::string base = doc["target"].value("time_base", std::string());
    PlotSpec spec;
    spec.title =
        fmt::format("jal-bench serve: {} ({} time)",
                    doc["target"].value("url", doc["target"].value("shape", std::string())), base);
    spec.x_label = "tok/s per user";
    spec.y_label = "mixed tok/s per kW (rated 700 W)";
    return scatter_svg(spec, points);
}

}  // namespace jal::bench
