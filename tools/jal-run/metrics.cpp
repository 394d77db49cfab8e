#include "metrics.hpp"

#include <algorithm>

#include <jal/model/runtime.hpp>

namespace jal::run {

Metrics compute_metrics(const RunFigures& f)
{
    Metrics m;
    m.ttft_ms = f.prefill_ns / 1e6;
    m.e2e_ms = (f.prefill_ns + f.decode_ns) / 1e6;
    m.e2e_s = m.e2e_ms / 1e3;
    if (f.out_tokens > 1) {
        m.tpot_ms = (m.e2e_ms - m.ttft_ms) / (f.out_tokens - 1);
        m.tok_s_user = m.tpot_ms > 0 ? 1000.0 / m.tpot_ms : 0;
    }
    // Every user's tokens over the time to serve them all: the users' prompts prefilled
    // one after another, then decoded together.
    const double seconds = (double(f.prefill_ns) * f.users + f.decode_ns) / 1e9;
    m.serve_s = seconds;
    const double out = double(f.out_tokens) * f.users;
    const double mixed = (double(f.prompt_tokens) + f.out_tokens) * f.users;
    m.output_tok_s = seconds > 0 ? out / seconds : 0;
    m.tok_s = m.output_tok_s;
    m.mixed_tok_s = seconds > 0 ? mixed / seconds : 0;
    const double chips = std::max<uint32_t>(f.chips, 1);
    const double joules =
        chips * (jal::model::kStaticPowerW * seconds +
                 (double(f.prefill_energy_nj) * f.users + f.decode_energy_nj) / 1e9);
    m.avg_power_w = seconds > 0 ? joules / seconds : 0;
    const double kw = m.avg_power_w / 1000.0;
    m.tok_s_per_kw = kw > 0 ? m.tok_s / kw : 0;
    m.mixed_tok_s_per_kw_modelled = kw > 0 ? m.mixed_tok_s / kw : 0;
    m.mixed_tok_s_per_kw_rated = m.mixed_tok_s / (kRatedPowerKw * chips);
    return m;
}

}  // namespace jal::run
