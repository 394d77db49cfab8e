// What the architecture readers (gpt_oss_config.cpp, deepseek_config.cpp) share: errors that
// name the key, the check of a file's tensors against an architecture's list, and the
// vocabulary size as llama.cpp derives it.
#pragma once

#include <jal/model/gguf.hpp>
#include <jal/model/gpt_oss_config.hpp>

#include <string>
#include <string_view>
#include <vector>

namespace jal::model::detail {

// F32 only: norms, biases, sinks (llama.cpp requires it).
JAL_HIDDEN const std::vector<TensorType>& f32_only();
// Types the CPU backend multiplies (and get_rows reads) for the weight matrices.
JAL_HIDDEN const std::vector<TensorType>& matrix_types();

// Throws INVALID_FIELD "<file>: key '<k>' at offset N: <msg>" (or without the key's place
// when it is absent).
[[noreturn]] JAL_HIDDEN void bad_key(const GgufFile& f, std::string_view k, const std::string& msg);

JAL_HIDDEN std::string shape_of(const std::vector<uint64_t>& ne);

// Every spec present with its shape and an allowed type, and no other tensor in the file
// (llama.cpp refuses tensors it did not create). `arch` names the architecture in messages.
JAL_HIDDEN void check_tensor_specs(const GgufFile& f, const std::vector<TensorSpec>& specs,
                                   std::string_view arch);

// The vocabulary size: the rows of token_embd.weight (llama.cpp takes it from the tokenizer
// and then requires that shape), checked against <arch>.vocab_size for the "none" tokenizer
// or the token list otherwise.
JAL_HIDDEN uint32_t read_vocab_size(const GgufFile& f, std::string_view arch, uint32_t n_embd,
                                    std::string_view tokenizer_model);

}  // namespace jal::model::detail
