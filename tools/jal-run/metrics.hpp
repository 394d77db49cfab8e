// InferenceX metrics (SemiAnalysis/InferenceX utils/process_result.py) from the chip's
// modelled time and energy: TTFT, TPOT = (E2E − TTFT)/(out − 1), tok/s/user = 1000/TPOT ms,
// output and mixed (input + output) tok/s of the chip, average power and tok/s per kW, the
// latter both against the modelled average power and against the rated package power.
// Energy = static power × modelled time + the dispatches' modelled dynamic energy
// (docs/model-runtime.md, docs/performance.md "InferenceX methodology").
#pragma once

#include <cstdint>

#include <jal/hw/mgmt.h>

namespace jal::run {

// The published normalisation of per-kW figures: the chip's rated package power, 700 W
// (ARCHITECTURE.md §10 and §12), whatever the modelled power of the run.
inline constexpr double kRatedPowerKw = JAL_POWER_TDP_MW / 1e6;

struct RunFigures {
    uint64_t prefill_ns = 0;         // modelled: one user's prompt
    uint64_t decode_ns = 0;          // modelled: every decode step after the first token
    uint64_t prefill_energy_nj = 0;  // dynamic
    uint64_t decode_energy_nj = 0;
    uint32_t prompt_tokens = 0;  // per user
    uint32_t out_tokens = 0;     // per user
    uint32_t users = 1;          // sequences decoded together (each prompt prefilled once)
    // --schedule mixed: one prompt run as chunks inside the decode steps of the other
    // users − 1 sequences: that many steps, their modelled time and dynamic energy.
    uint32_t mixed_steps = 0;
    uint64_t mixed_ns = 0, mixed_energy_nj = 0;
};

struct Metrics {
    // One request: TTFT, TPOT, E2E = TTFT + (out − 1) × TPOT (e2e_s = e2e_ms / 1000).
    double ttft_ms = 0, tpot_ms = 0, e2e_ms = 0, e2e_s = 0, tok_s_user = 0;
    // The chip serving `users` requests: serve_s = users × TTFT + (out − 1) × TPOT (each
    // prompt prefilled alone, one after another, then every sequence decoded together; the
    // mixed schedule: see compute_metrics);
    // output_tok_s = users × out / serve_s (tok_s: the same figure, its older name);
    // mixed_tok_s = users × (prompt + out) / serve_s.
    double serve_s = 0, tok_s = 0, output_tok_s = 0, mixed_tok_s = 0;
    // Average modelled power over serve_s; per kW of it (tok_s_per_kw: output tokens) and
    // mixed tok/s per kW rated (kRatedPowerKw).
    double avg_power_w = 0, tok_s_per_kw = 0;
    double mixed_tok_s_per_kw_modelled = 0, mixed_tok_s_per_kw_rated = 0;
};

// With f.mixed_steps, the steady state of continuous batching with prompt chunks mixed
// into decode steps (docs/performance.md, "Mixed steps"); else prompts prefilled one after
// another, then decoded together. Throws if f's mixed load has more prompt chunks than the
// served requests have steps to carry them.
Metrics compute_metrics(const RunFigures& f);

}  // namespace jal::run
