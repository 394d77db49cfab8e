// `jal-bench decode-mma MODEL`: a GPT-OSS decode step's matrix arithmetic alone on this host.
// Every matrix a batch-1 decode step multiplies (each layer's q, k, v, output projection and
// router, the expert_used_count experts' gate, up and down, the output head) through
// jal::numerics::mma / mma_kmajor, the functions jal-emu's MMA instruction runs, with the
// layouts the model runtime gives them (dense F32, BF16 and F16 matrices K-major), F32
// activations (the default numerics; Q8_0 ones for Q8_0 matrices, the only a the engine
// multiplies them by), and each
// thread given its share of every matrix's columns, laid out contiguously as a slice's
// shard is. No emulator, no interpreter, no timing model, no dependencies between the
// matrices: what is left is the arithmetic with the chip's numerics and the weight bytes the
// host's memory delivers, a floor under any emulated decode step of that model on that many
// host threads. `tools/jal-run/bench-model.sh` prints it beside llama.cpp's step
// (docs/performance.md, "A decode step's arithmetic alone").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace jal::bench {

struct DecodeMmaBenchOptions {
    std::string model;         // a GPT-OSS GGUF
    unsigned threads = 0;      // the second row's threads (0: one a host CPU)
    double min_seconds = 1.0;  // steps timed per row (at least five)
    bool quiet = false;        // no progress lines on stderr
};

// {"model", "matrices", "bytes" (weight bytes a step), "rows": [{"threads", "step_ms"
// (median), "step_ms_best", "gb_s" (bytes over the median), "steps", "by_format": [{"dtype",
// "bytes", "ms" (a thread's mean time a step in that format's GEMVs)}, ...]}, ...]}: one row
// for one thread and one for `threads` (when more than one).
nlohmann::json run_decode_mma_bench(const DecodeMmaBenchOptions& options);

std::string format_decode_mma_table(const nlohmann::json& doc);

}  // namespace jal::bench
