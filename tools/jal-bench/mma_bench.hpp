// `jal-bench mma`: the host throughput of the matrix engine's arithmetic, the
// jal::numerics::mma that jal-emu's MMA instruction runs (docs/numerics.md), at decode
// (M = 1, 4) and prefill (M = 64) shapes for each weight format the models use, against
// single-thread OpenBLAS sgemm on the same M, N, K measured in the same run. No emulator:
// this is the arithmetic alone, its operands resident in the host's caches (the same tiles
// again and again), which bounds what a dispatch's MMAs can cost. docs/performance.md,
// "Matrix arithmetic on the host".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace jal::bench {

struct MmaBenchOptions {
    bool quick = false;        // fewer shapes and shorter timing (a smoke run)
    bool quiet = false;        // no progress lines on stderr
    double min_seconds = 0.3;  // timing per case (best of the repetitions in that time)
};

// {"isa": "avx2"|"scalar", "rows": [{a, b, m, n, k, us, gflops, b_gb_s, sgemm_gflops,
// vs_sgemm}, ...]}
nlohmann::json run_mma_bench(const MmaBenchOptions& options);

std::string format_mma_table(const nlohmann::json& doc);

}  // namespace jal::bench
