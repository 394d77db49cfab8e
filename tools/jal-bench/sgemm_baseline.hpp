// The host baseline of `jal-bench kernels`: OpenBLAS cblas_sgemm on one thread, F32, on
// the same M, N, K as a kernel, measured in the same run.
#pragma once

#include <cstdint>

namespace jal::bench {

// GFLOP/s (2·M·N·K / seconds) of C = A·Bᵀ (A: M×K, B: N×K, row-major), the best of a
// few repetitions lasting at least `min_seconds` together. Single-threaded.
double sgemm_gflops(uint32_t m, uint32_t n, uint32_t k, double min_seconds = 0.3);

}  // namespace jal::bench
