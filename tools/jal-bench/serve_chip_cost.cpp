#include "serve_chip_cost.hpp"

#include <numeric>
#include <utility>

namespace jal::bench {

ChipCost::ChipCost(jal::model::Runtime& rt, uint32_t measure_steps)
    : rt_(rt), measure_steps_(measure_steps)
{}

StepCost ChipCost::interpolated_prefill(uint32_t len) const
{
    // The two run lengths nearest to len: on either side when there are, else the two
    // closest on the one side (extrapolated).
    auto hi = prefills_.lower_bound(len);
    if (hi == prefills_.end()) --hi;
    if (hi == prefills_.begin()) ++hi;
    auto lo = std::prev(hi);
    const double f = (double(len) - lo->first) / double(hi->first - lo->first);
    auto lerp = [f](uint64_t a, uint64_t b) {
        const double v = double(a) + (double(b) - double(a)) * f;
        return static_cast<uint64_t>(v > 0 ? v : 0);
    };
    return {lerp(lo->second.ns, hi->second.ns), lerp(lo->second.nj, hi->second.nj)};
}

// The mean of the runs.
static StepCost mean_of(const std::vector<StepCost>& run)
{
    StepCost mean;
    for (const StepCost& c : run) mean.ns += c.ns, mean.nj += c.nj;
    return {mean.ns / run.size(), mean.nj / run.size()};
}

int ChipCost::admit(std::span<const int32_t> prompt, StepCost& cost)
{
    const int seq = rt_.create_sequence();
    const auto len = static_cast<uint32_t>(prompt.size());
    if (projected()) {
        auto it = prefills_.find(len);
        if (it != prefills_.end() || prefills_.size() >= 2) {
            cost = it != prefills_.end() ? it->second : interpolated_prefill(len);
            (it != prefills_.end() ? counts_.prefills_reused : counts_.prefills_interpolated)++;
            rt_.assume_length(seq, len);
            return seq;
        }
    }
    rt_.prefill(seq, prompt);
    cost = {rt_.last().modelled_ns, rt_.last().energy_nj};
    prefills_.emplace(len, cost);
    counts_.prefills_run++;
    return seq;
}

StepCost ChipCost::decode(const std::vector<int>& seqs)
{
    std::vector<StepCost>& run = steps_[seqs.size()];
    if (projected() && run.size() >= measure_steps_) {
        // The tokens' positions are taken as if the step had run.
        for (int s : seqs) rt_.assume_length(s, rt_.sequence_length(s) + 1);
        counts_.steps_projected++;
        return mean_of(run);
    }
    std::vector<std::pair<int, int32_t>> batch;
    for (int s : seqs) batch.push_back({s, 0});  // timing only: the ids do not matter
    rt_.decode(batch);
    const StepCost c{rt_.last().modelled_ns, rt_.last().energy_nj};
    if (projected()) run.push_back(c);
    counts_.steps_run++;
    return c;
}

StepCost ChipCost::mixed(const std::vector<int>& seqs, int prompt_seq, uint32_t n)
{
    const uint32_t pos0 = rt_.sequence_length(prompt_seq);
    std::vector<StepCost>& run = mixed_[{seqs.size(), n, pos0}];
    if (projected() && !run.empty() && run.size() >= measure_steps_) {
        for (int s : seqs) rt_.assume_length(s, rt_.sequence_length(s) + 1);
        rt_.assume_length(prompt_seq, pos0 + n);
        counts_.mixed_projected++;
        return mean_of(run);
    }
    std::vector<std::pair<int, int32_t>> batch;
    for (int s : seqs) batch.push_back({s, 0});
    const std::vector<int32_t> chunk(n, 0);
    if (batch.empty())
        rt_.prefill(prompt_seq, chunk);
    else
        rt_.mixed_step(batch, prompt_seq, chunk);
    const StepCost c{rt_.last().modelled_ns, rt_.last().energy_nj};
    if (projected()) run.push_back(c);
    counts_.mixed_run++;
    return c;
}

void ChipCost::release(int seq)
{
    rt_.free_sequence(seq);
}

}  // namespace jal::bench
