// `jal-bench kernels`: the linear kernels (GEMV/GEMM, expert GEMM, embedding, argmax,
// all-reduce, activation quantization) at a decode and a prefill shape, run through a real
// jal-emu: modelled time and fraction of the roofline (docs/performance.md, "Kernels"),
// the emulator's host throughput and its ratio to single-thread OpenBLAS SGEMM.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace jal::bench {

struct KernelBenchOptions {
    std::string emu_dir;
    uint32_t device = 0;
    bool quick = false;  // smaller shapes (vocab 32768, fewer tokens): a smoke run
    bool quiet = false;  // no progress lines on stderr
    std::string filter;  // run only kernels whose name contains this
};

// Runs every case; returns {"kernels": [ {kernel, shape, slices, ...}, ... ], ...}.
nlohmann::json run_kernel_bench(const KernelBenchOptions& options);

// The human table of a run_kernel_bench document.
std::string format_kernel_table(const nlohmann::json& doc);

}  // namespace jal::bench
