#include "fabric_bench.hpp"

#include "emu/fabric/collective_model.hpp"

#include <fmt/format.h>

#include <thread>

namespace jal::bench {

namespace {

using namespace jal::emu::fabric;

// DeepEP's low-latency kernels as published (deepseek-ai/DeepEP README, V1: H800 with one
// 400 Gb/s CX7 NIC a GPU, 128 tokens a batch, hidden 7168, top-8 experts, FP8 dispatch,
// BF16 combine), and the same traffic on our links: each token to 8 experts, FP8 with a
// 4-byte scale per 128 values (7,392 B) out, BF16 (14,336 B) back.
struct DeepEpPoint {
    unsigned ep;
    double dispatch_us, combine_us;
};
constexpr DeepEpPoint kDeepEp[] = {{8, 77, 114}, {128, 192, 369}};
constexpr std::uint64_t kTokens = 128, kTopK = 8;
constexpr std::uint64_t kDispatchBytes = 7168 + 7168 / 128 * 4, kCombineBytes = 7168 * 2;

nlohmann::json model_row(const CollectiveResult& r)
{
    return {{"bytes", r.bytes},
            {"algorithm", algorithm_name(r.algorithm)},
            {"time_us", static_cast<double>(r.time_ns) / 1e3},
            {"algbw_gbps", r.algbw_gbps},
            {"busbw_gbps", r.busbw_gbps},
            {"busbw_fraction", r.busbw_fraction}};
}

nlohmann::json moe_rows()
{
    nlohmann::json rows = nlohmann::json::array();
    for (const DeepEpPoint& p : kDeepEp) {
        const auto dispatch =
            best_collective(Collective::all_to_all, p.ep, kTokens * kTopK * kDispatchBytes);
        const auto combine =
            best_collective(Collective::all_to_all, p.ep, kTokens * kTopK * kCombineBytes);
        rows.push_back({{"chips", p.ep},
                        {"dispatch_bytes", dispatch.bytes},
                        {"dispatch_us", static_cast<double>(dispatch.time_ns) / 1e3},
                        {"combine_bytes", combine.bytes},
                        {"combine_us", static_cast<double>(combine.time_ns) / 1e3},
                        {"deepep_dispatch_us", p.dispatch_us},
                        {"deepep_combine_us", p.combine_us}});
    }
    return rows;
}

double large(const nlohmann::json& rows)
{
    return rows.back()["busbw_fraction"].get<double>();
}

}  // namespace

nlohmann::json model_collectives(const FabricBenchOptions& o)
{
    nlohmann::json out;
    for (Collective c : {Collective::all_reduce, Collective::all_to_all})
        for (unsigned n : {8u, 128u}) {
            nlohmann::json rows = nlohmann::json::array();
            for (std::uint64_t bytes : o.collective_sizes)
                rows.push_back(model_row(best_collective(c, n, bytes)));
            out[collective_name(c)][std::to_string(n)] = rows;
        }
    out["moe_low_latency"] = moe_rows();
    out["link_gbps"] = SwitchedDomainModel(2).chip_gbytes_per_s();
    return out;
}

nlohmann::json run_fabric_bench(const FabricBenchOptions& o)
{
    const nlohmann::json measured = measure_fabric(o);
    const nlohmann::json modelled = model_collectives(o);
    const nlohmann::json& sizes = measured["sizes"];
    nlohmann::json doc;
    doc["provider"] = o.provider;
    doc["raw_gbps"] = sizes.back()["raw_gbps"];
    doc["chip_gbps"] = sizes.back()["chip_gbps"];
    doc["chip_vs_raw"] = sizes.back()["chip_vs_raw"];
    doc["raw_latency_us"] = measured["raw_latency_us"];
    doc["chip_latency_us"] = measured["chip_latency_us"];
    const auto& ar = modelled["all_reduce"];
    const auto& a2a = modelled["all_to_all"];
    doc["allreduce_busbw_fraction_8"] = large(ar["8"]);
    doc["allreduce_busbw_fraction_128"] = large(ar["128"]);
    doc["alltoall_busbw_fraction_8"] = large(a2a["8"]);
    doc["alltoall_busbw_fraction_128"] = large(a2a["128"]);
    doc["allreduce_small_latency_us_128"] = ar["128"].front()["time_us"];
    doc["alltoall_small_latency_us_128"] = a2a["128"].front()["time_us"];
    doc["measured"] = sizes;
    doc["modelled"] = modelled;
    doc["machine"] = {{"cpus", std::thread::hardware_concurrency()}};
    return doc;
}

namespace {

std::string size_text(std::uint64_t b)
{
    if (b >= (1u << 30) && b % (1u << 30) == 0) return fmt::format("{} GiB", b >> 30);
    if (b >= (1u << 20) && b % (1u << 20) == 0) return fmt::format("{} MiB", b >> 20);
    if (b >= (1u << 10) && b % (1u << 10) == 0) return fmt::format("{} KiB", b >> 10);
    return fmt::format("{} B", b);
}

void modelled_table(const nlohmann::json& m, std::string& s)
{
    s += fmt::format("\nmodelled on switched planes ({} GB/s a chip each way)\n",
                     m["link_gbps"].get<double>());
    s +=
        "  size        all-reduce 8          all-reduce 128        all-to-all 8   all-to-all 128\n";
    const auto& ar = m["all_reduce"];
    const auto& a2a = m["all_to_all"];
    for (std::size_t i = 0; i < ar["8"].size(); ++i) {
        auto cell = [&](const nlohmann::json& r, bool algo) {
            return fmt::format("{:>5.3f} {:>8.1f}us{}", r["busbw_fraction"].get<double>(),
                               r["time_us"].get<double>(),
                               algo ? fmt::format(" {:<4.4}", r["algorithm"].get<std::string>())
                                    : std::string());
        };
        s += fmt::format("  {:<10}  {}  {}  {}  {}\n", size_text(ar["8"][i]["bytes"]),
                         cell(ar["8"][i], true), cell(ar["128"][i], true), cell(a2a["8"][i], false),
                         cell(a2a["128"][i], false));
    }
    s += "  (busbw as a fraction of the link rate, time; ring, one_shot, halving_doubling)\n";
    s += "\nMoE low-latency dispatch/combine (128 tokens, 7168 hidden, top-8) vs DeepEP\n";
    for (const auto& r : m["moe_low_latency"])
        s += fmt::format("  EP {:>3}: dispatch {:>6.1f} us (DeepEP {:>4.0f}), combine {:>6.1f} us "
                         "(DeepEP {:>4.0f})\n",
                         r["chips"].get<unsigned>(), r["dispatch_us"].get<double>(),
                         r["deepep_dispatch_us"].get<double>(), r["combine_us"].get<double>(),
                         r["deepep_combine_us"].get<double>());
}

}  // namespace

std::string format_fabric_table(const nlohmann::json& d)
{
    std::string s =
        fmt::format("measured over libfabric {} between two processes ({} CPUs)\n",
                    d["provider"].get<std::string>(), d["machine"]["cpus"].get<unsigned>());
    s += "  size        raw GB/s   chip GB/s   chip/raw\n";
    for (const auto& r : d["measured"])
        s += fmt::format("  {:<10}  {:>8.2f}   {:>9.2f}   {:>8.2f}\n", size_text(r["bytes"]),
                         r["raw_gbps"].get<double>(), r["chip_gbps"].get<double>(),
                         r["chip_vs_raw"].get<double>());
    s += fmt::format("  64 B write completes in {:.1f} us raw, {:.1f} us chip to chip\n",
                     d["raw_latency_us"].get<double>(), d["chip_latency_us"].get<double>());
    modelled_table(d["modelled"], s);
    return s;
}

}  // namespace jal::bench
