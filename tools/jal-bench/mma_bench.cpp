// The matrix engine's arithmetic on the host (mma_bench.hpp).
#include "mma_bench.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <random>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include <jal/isa/disasm.hpp>
#include <jal/isa/numerics.hpp>
#include <jal/isa/tile_math.hpp>

#include "sgemm_baseline.hpp"

namespace jal::bench {

using json = nlohmann::json;

namespace {

struct Case {
    jal_dtype a, b;
    uint32_t m, n, k;
};

// "f32", "mxfp4", ...: the ISA's own names (jal-as, jal-objdump).
const char* dtype_label(jal_dtype dt)
{
    const char* name = isa::dtype_name(dt);
    return name ? name : "?";
}

// M rows of K elements of dt, from uniform random floats quantised as the chip's VCVT does.
std::vector<unsigned char> random_rows(jal_dtype dt, uint32_t rows, uint32_t k, std::mt19937& rng)
{
    std::uniform_real_distribution<float> d(-1, 1);
    const size_t rb = numerics::row_bytes(dt, k);
    std::vector<unsigned char> out(rb * rows);
    std::vector<float> row(k);
    for (uint32_t r = 0; r < rows; r++) {
        for (float& f : row) f = d(rng);
        numerics::quantize_row(dt, row.data(), out.data() + r * rb, k);
    }
    return out;
}

// Seconds a call of mma(acc, a, b), the best of repetitions lasting min_seconds together.
double time_mma(const Case& c, double min_seconds)
{
    std::mt19937 rng(1);
    const std::vector<unsigned char> a = random_rows(c.a, c.m, c.k, rng);
    const std::vector<unsigned char> b = random_rows(c.b, c.n, c.k, rng);
    std::vector<float> acc(size_t{c.m} * c.n);
    const numerics::Tile at{acc.data(), c.m, c.n, c.n * 4, JAL_DT_F32};
    const auto ra = static_cast<uint32_t>(numerics::row_bytes(c.a, c.k));
    const auto rb = static_cast<uint32_t>(numerics::row_bytes(c.b, c.k));
    const numerics::ConstTile ta{a.data(), c.m, c.k, ra, c.a};
    const numerics::ConstTile tb{b.data(), c.n, c.k, rb, c.b};
    std::string error;
    if (numerics::mma(at, ta, tb, &error) != JAL_STATUS_OK)
        throw std::runtime_error("mma " + std::string(dtype_label(c.a)) + " x " + dtype_label(c.b) +
                                 ": " + error);
    double best = 1e30, total = 0;
    for (int rep = 0; rep < 2000 && (rep < 3 || total < min_seconds); rep++) {
        const auto t0 = std::chrono::steady_clock::now();
        (void)numerics::mma(at, ta, tb);
        const double s =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        best = std::min(best, s);
        total += s;
    }
    return best;
}

// b is one tile, so at most the 4 MiB of a slice's L1: N is picked per format to fill
// about 3 MB of it at K = 2880 (GPT-OSS's hidden width).
std::vector<Case> cases(bool quick)
{
    const uint32_t k = 2880;
    std::vector<Case> out;
    const std::vector<uint32_t> ms =
        quick ? std::vector<uint32_t>{1, 64} : std::vector<uint32_t>{1, 4, 64};
    for (uint32_t m : ms) {
        out.push_back({JAL_DT_F32, JAL_DT_F32, m, 256, k});
        out.push_back({JAL_DT_F32, JAL_DT_BF16, m, 512, k});
        out.push_back({JAL_DT_F32, JAL_DT_MXFP4, m, 1440, k});
        out.push_back({JAL_DT_Q8_0, JAL_DT_MXFP4, m, 1440, k});
    }
    return out;
}

}  // namespace

json run_mma_bench(const MmaBenchOptions& o)
{
    json rows = json::array();
    for (const Case& c : cases(o.quick)) {
        if (!o.quiet)
            std::cerr << fmt::format("jal-bench mma: {} x {} M={} N={} K={}\n", dtype_label(c.a),
                                     dtype_label(c.b), c.m, c.n, c.k);
        const double s = time_mma(c, o.min_seconds);
        const double flops = 2.0 * c.m * c.n * c.k;
        const double sgemm = sgemm_gflops(c.m, c.n, c.k, o.min_seconds);
        rows.push_back({{"a", dtype_label(c.a)},
                        {"b", dtype_label(c.b)},
                        {"m", c.m},
                        {"n", c.n},
                        {"k", c.k},
                        {"us", s * 1e6},
                        {"gflops", flops / s / 1e9},
                        {"b_gb_s", double(numerics::row_bytes(c.b, c.k)) * c.n / s / 1e9},
                        {"sgemm_gflops", sgemm},
                        {"vs_sgemm", flops / s / 1e9 / sgemm}});
    }
    const numerics::Isa isa = numerics::active_isa();
    return {{"isa", isa == numerics::Isa::avx512 ? "avx512"
                    : isa == numerics::Isa::avx2 ? "avx2"
                                                 : "scalar"},
            {"rows", rows}};
}

std::string format_mma_table(const json& doc)
{
    std::string out =
        fmt::format("code path: {} (one host thread; operands in the host's caches)\n",
                    doc["isa"].get<std::string>());
    out += fmt::format("{:<6} {:<6} {:>4} {:>6} {:>6} {:>10} {:>8} {:>8} {:>13} {:>9}\n", "a", "b",
                       "M", "N", "K", "us", "GFLOP/s", "b GB/s", "sgemm GFLOP/s", "vs_sgemm");
    for (const json& r : doc["rows"])
        out += fmt::format(
            "{:<6} {:<6} {:>4} {:>6} {:>6} {:>10.1f} {:>8.2f} {:>8.2f} {:>13.2f} {:>9.3f}\n",
            r["a"].get<std::string>(), r["b"].get<std::string>(), r["m"].get<uint32_t>(),
            r["n"].get<uint32_t>(), r["k"].get<uint32_t>(), r["us"].get<double>(),
            r["gflops"].get<double>(), r["b_gb_s"].get<double>(), r["sgemm_gflops"].get<double>(),
            r["vs_sgemm"].get<double>());
    return out;
}

}  // namespace jal::bench
