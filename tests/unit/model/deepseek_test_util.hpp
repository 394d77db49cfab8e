// DeepSeek-V3-architecture GGUF files in memory, with hooks to break them (the deepseek2
// counterpart of gpt_oss_bytes).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <jal/model/synthetic_deepseek.hpp>

#include "gguf_test_util.hpp"

namespace jal::model::test {

// The smallest useful DeepSeek shape: two layers, the first dense; 4 experts in 2 groups.
SyntheticDeepseekOptions deepseek_micro_options();

struct DeepseekEdits : GptOssEdits {
    DeepseekEdits() { architecture = "deepseek2"; }
    // Keys (full names) written with these values instead, or added when not written.
    std::map<std::string, uint32_t> u32_values;
    std::map<std::string, float> f32_values;
    std::vector<std::string> drop_tensors;  // more tensors to leave out
};

// The keys convert_hf_to_gguf.py writes for the options' model and its tensors (zero
// weights; routed experts MXFP4, everything else F32), with the edits.
std::vector<std::byte> deepseek_bytes(const SyntheticDeepseekOptions& options,
                                      const DeepseekEdits& edits = {});

}  // namespace jal::model::test
