#include "metrics.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include <jal/model/runtime.hpp>

namespace jal::run {

namespace {

// The rates of a served load from its time and dynamic energy.
void load_rates(const RunFigures& f, double seconds, double dynamic_nj, Metrics& m)
{
    m.serve_s = seconds;
    const double out = double(f.out_tokens) * f.users;
    const double mixed = (double(f.prompt_tokens) + f.out_tokens) * f.users;
    m.output_tok_s = seconds > 0 ? out / seconds : 0;
    m.tok_s = m.output_tok_s;
    m.mixed_tok_s = seconds > 0 ? mixed / seconds : 0;
    const double joules = jal::model::kStaticPowerW * seconds + dynamic_nj / 1e9;
    m.avg_power_w = seconds > 0 ? joules / seconds : 0;
    const double kw = m.avg_power_w / 1000.0;
    m.tok_s_per_kw = kw > 0 ? m.tok_s / kw : 0;
    m.mixed_tok_s_per_kw_modelled = kw > 0 ? m.mixed_tok_s / kw : 0;
    m.mixed_tok_s_per_kw_rated = m.mixed_tok_s / kRatedPowerKw;
}

// C requests in flight, one of them prefilling: its k chunks ride in k steps that also
// decode the other C − 1, and every other step decodes all C. Over the life of C requests
// (C × k chunks, C × (out − 1) decode rows) that is m = C·k mixed steps and N − m plain
// ones, where m·(C − 1) + (N − m)·C = C·(out − 1), so N = out − 1 + k. One request's life
// (its E2E) is then the whole cycle: its own k steps, then out − 1 tokens over the rest.
Metrics mixed_metrics(const RunFigures& f)
{
    Metrics m;
    const double C = f.users, k = f.mixed_steps, out1 = f.out_tokens - 1.0;
    const double plain = out1 + k - C * k;
    if (plain < 0)
        throw std::runtime_error(fmt::format(
            "--schedule mixed: {} requests' prompts need {} chunk steps, more than the {} "
            "steps of their generation carry; fewer users or more output tokens",
            f.users, C * k, out1 + k));
    const double step_ns = f.decode_ns / out1, step_nj = f.decode_energy_nj / out1;
    const double serve_ns = C * f.mixed_ns + plain * step_ns;
    m.ttft_ms = f.mixed_ns / 1e6;
    m.e2e_ms = serve_ns / 1e6;
    m.e2e_s = m.e2e_ms / 1e3;
    m.tpot_ms = (m.e2e_ms - m.ttft_ms) / out1;
    m.tok_s_user = m.tpot_ms > 0 ? 1000.0 / m.tpot_ms : 0;
    load_rates(f, serve_ns / 1e9, C * f.mixed_energy_nj + plain * step_nj, m);
    return m;
}

}  // namespace

Metrics compute_metrics(const RunFigures& f)
{
    if (f.mixed_steps > 0 && f.out_tokens > 1) return mixed_metrics(f);
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
    load_rates(f, (double(f.prefill_ns) * f.users + f.decode_ns) / 1e9,
               double(f.prefill_energy_nj) * f.users + f.decode_energy_nj, m);
    return m;
}

}  // namespace jal::run
