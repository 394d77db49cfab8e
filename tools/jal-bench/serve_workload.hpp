// The requests of `jal-bench serve`, as InferenceX's benchmark_serving draws its "random"
// dataset: each prompt and output length uniform in [len × range_ratio, len], the prompt
// random token ids (sent as ids, so any model serves them, vocabulary or not).
#pragma once

#include <cstdint>
#include <vector>

namespace jal::bench {

struct WorkloadSpec {
    uint32_t input_len = 1024;
    uint32_t output_len = 128;
    double range_ratio = 1.0;  // 1: every request exactly input_len / output_len
    uint32_t vocab = 256;      // ids drawn from [0, vocab)
    uint64_t seed = 0;
};

struct BenchRequest {
    std::vector<int32_t> prompt;
    uint32_t output_len = 0;
};

// `n` requests; the same spec and n give the same requests.
std::vector<BenchRequest> make_workload(const WorkloadSpec& spec, uint32_t n);

}  // namespace jal::bench
