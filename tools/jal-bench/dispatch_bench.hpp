// `jal-bench dispatch`: the emulator's wall-clock cost of one dispatch. An empty program
// (one `end`) on 1 and on 64 slices, in batches as the model runtime issues them
// (Launcher::run_batch), with and without JAL_DISPATCH_F_TIMING_ONLY, and one at a time
// (Launcher::run, a round trip each); the baseline, measured in the same run, is a NOP
// packet on the same queue. docs/performance.md, "Dispatch cost".
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace jal::bench {

struct DispatchBenchOptions {
    std::string emu_dir;
    uint32_t device = 0;
    uint32_t batch = 256;   // dispatches a batch
    uint32_t repeats = 5;   // batches (or runs of `batch` single dispatches); the median counts
    uint32_t nops = 20000;  // NOP packets a baseline repeat
    bool quiet = false;     // no progress lines on stderr
};

// Runs every case; returns {"nop_us": ..., "rows": [ {slices, mode, us_per_dispatch,
// vs_nop, modelled_us, ...}, ... ], ...}.
nlohmann::json run_dispatch_bench(const DispatchBenchOptions& options);

// The human table of a run_dispatch_bench document.
std::string format_dispatch_table(const nlohmann::json& doc);

}  // namespace jal::bench
