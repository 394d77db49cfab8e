// `jal-bench memory`: the host's own memory floor for an emulated decode step. jal-emu
// executes a TLOAD by copying the rows from the emulated HBM (host memory) into the slice's
// L1 (host memory too), and llama.cpp on the CPU reads its weights where they lie; so what
// the host can read and copy a second, on one thread and on all of them at once, bounds
// both (docs/performance.md, "The host's memory floor"). `tools/jal-run/bench-model.sh`
// runs it with a decode step's bytes and prints the floor beside the two decode rates.
#pragma once

#include <cstdint>
#include <string>

#include <jal/hw/isa.h>

#include <nlohmann/json.hpp>

namespace jal::bench {

struct MemoryBenchOptions {
    // Each thread's source: read, or copied from, once a pass.
    uint64_t bytes = uint64_t{256} << 20;
    // Each thread's copy destination (a slice's L1), reused in turn.
    uint64_t ring = JAL_SLICE_L1_BYTES;
    uint64_t piece = uint64_t{64} << 10;  // bytes a memcpy
    unsigned threads = 0;                 // 0: one a host CPU
    double min_seconds = 1.0;             // passes per case (best of them)
    bool quiet = false;                   // no progress lines on stderr
};

// {"bytes", "ring", "piece", "rows": [{"threads", "read_gb_s", "copy_gb_s"}, ...]}: one row
// for one thread and one for `threads` (when more than one), each figure all threads' bytes
// over the slowest thread's time.
nlohmann::json run_memory_bench(const MemoryBenchOptions& options);

std::string format_memory_table(const nlohmann::json& doc);

}  // namespace jal::bench
