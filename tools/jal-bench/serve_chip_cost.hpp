// What each scheduler step of `jal-bench serve --timing-only` costs the modelled chip, from
// a timing-only model Runtime: each prefill and decode step either run (its modelled time
// and energy, rt.last()) or projected from the ones run, so an 8k/1k sweep takes minutes
// rather than hours of emulation (docs/serving.md, "Benchmark").
//
// Projection (measure_steps > 0):
//  * a prefill of a prompt length already run is reused: in timing-only mode its cost
//    depends on the length alone (no data, a fixed expert spread); a new length, once two
//    lengths have run, is interpolated linearly between the two nearest run ones;
//  * the first measure_steps decode steps of each batch size run; later steps of that size
//    cost their mean (the context grows by output_len / input_len meanwhile, which such a
//    step's KV reads do not see). The sequences' lengths still advance (assume_length);
//  * likewise mixed steps (a prompt chunk beside decode rows), by batch size, chunk length
//    and the chunk's first position.
// measure_steps == 0 runs everything.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <tuple>
#include <vector>

#include <jal/model/runtime.hpp>

namespace jal::bench {

struct StepCost {
    uint64_t ns = 0;  // modelled
    uint64_t nj = 0;  // dynamic energy
};

struct CostCounts {
    uint64_t prefills_run = 0, prefills_reused = 0, prefills_interpolated = 0;
    uint64_t steps_run = 0, steps_projected = 0;
    uint64_t mixed_run = 0, mixed_projected = 0;
};

class ChipCost {
public:
    ChipCost(jal::model::Runtime& rt, uint32_t measure_steps);

    // A sequence holding the prefilled prompt; `cost` is the prefill's.
    int admit(std::span<const int32_t> prompt, StepCost& cost);
    // One decode step of the sequences together.
    StepCost decode(const std::vector<int>& seqs);
    // A sequence whose prompt is still to run (in chunks, by mixed()).
    int start() { return rt_.create_sequence(); }
    // One pass: a decode row for each of `seqs` and the next `n` tokens of `prompt_seq`'s
    // prompt (a prefill pass alone when seqs is empty).
    StepCost mixed(const std::vector<int>& seqs, int prompt_seq, uint32_t n);
    // Rows of one pass.
    uint32_t rows() const { return rt_.options().max_batch_tokens; }
    void release(int seq);

    const CostCounts& counts() const { return counts_; }
    bool projected() const { return measure_steps_ > 0; }

private:
    StepCost interpolated_prefill(uint32_t len) const;

    jal::model::Runtime& rt_;
    uint32_t measure_steps_;
    std::map<uint32_t, StepCost> prefills_;          // by prompt length, run
    std::map<size_t, std::vector<StepCost>> steps_;  // by batch size, run
    // by (batch size, chunk length, the chunk's first position), run
    std::map<std::tuple<size_t, uint32_t, uint32_t>, std::vector<StepCost>> mixed_;
    CostCounts counts_;
};

}  // namespace jal::bench
