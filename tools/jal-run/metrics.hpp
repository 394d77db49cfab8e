// InferenceX metrics (SemiAnalysis/InferenceX utils/process_result.py) from the chip's
// modelled time and energy: TTFT, TPOT = (E2E − TTFT)/(out − 1), tok/s/user = 1000/TPOT ms,
// average power and tok/s per kW. Energy = static power × modelled time + the dispatches'
// modelled dynamic energy (docs/model-runtime.md).
#pragma once

#include <cstdint>

namespace jal::run {

struct RunFigures {
    uint64_t prefill_ns = 0;         // modelled: one user's prompt
    uint64_t decode_ns = 0;          // modelled: every decode step after the first token
    uint64_t prefill_energy_nj = 0;  // dynamic
    uint64_t decode_energy_nj = 0;
    uint32_t out_tokens = 0;  // per user
    uint32_t users = 1;       // sequences decoded together (each prompt prefilled once)
};

struct Metrics {
    double ttft_ms = 0, tpot_ms = 0, e2e_ms = 0, tok_s_user = 0, tok_s = 0;
    double avg_power_w = 0, tok_s_per_kw = 0;
};

Metrics compute_metrics(const RunFigures& f);

}  // namespace jal::run
