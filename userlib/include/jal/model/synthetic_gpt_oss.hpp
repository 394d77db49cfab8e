// Synthetic GPT-OSS-architecture models: random weights from a seed, the real architecture
// and metadata, loadable by llama.cpp. For tests and demonstrations (jal-mkmodel, jal-run's
// embedded default); see docs/model.md.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <jal/api.h>
#include <jal/model/gpt_oss_config.hpp>

namespace jal::model {

// The vocabulary a synthetic model carries.
enum class SyntheticVocab {
    none,   // tokenizer.ggml.model "none": token ids in, token ids out (n_vocab as set)
    o200k,  // GPT-OSS's o200k_harmony, as llama.cpp's converter writes it (n_vocab 201088)
};

struct SyntheticGptOssOptions {
    uint64_t seed = 1;
    uint32_t n_layer = 2;
    uint32_t n_embd = 64;  // multiple of 32 (MXFP4 rows)
    uint32_t n_head = 4;
    uint32_t n_head_kv = 4;  // divides n_head
    uint32_t head_dim = 16;  // even
    uint32_t n_expert = 4;
    uint32_t n_expert_used = 1;
    uint32_t n_ff_exp = 64;  // multiple of 32 (MXFP4 rows of the down projection)
    uint32_t n_vocab = 256;
    uint32_t n_ctx = 131072;  // context_length, as GPT-OSS (YaRN factor 32 over 4096)
    uint32_t sliding_window = 128;
    // The dense matrices (token_embd, output, attn_q/k/v, attn_output, ffn_gate_inp): F32
    // (exact everywhere), or F16, BF16 or Q8_0 as llama.cpp's converters write them
    // (rounded from the same F32 draws; Q8_0 needs --heads x --head-dim a multiple of 32).
    TensorType dense_type = TensorType::F32;
    std::string preset;  // recorded in general.name
    SyntheticVocab vocab = SyntheticVocab::none;
    // With SyntheticVocab::o200k: the text of tiktoken's o200k_base ranks file (base64 token,
    // space, rank per line; scripts/fetch-tiktoken.sh), not owned. jal-mkmodel and jal-run
    // carry it embedded (docs/decisions.md).
    std::string_view o200k_ranks;
};

// "none" or "o200k", by name.
JAL_API std::optional<SyntheticVocab> synthetic_vocab(std::string_view name);

// The dense types the writer takes ("f32", "f16", "bf16", "q8_0"), by name.
JAL_API std::optional<TensorType> synthetic_dense_type(std::string_view name);

// The named shapes: "tiny", "small", "gqa-window", "medium" (see docs/model.md).
JAL_API std::vector<std::string> synthetic_preset_names();
JAL_API std::optional<SyntheticGptOssOptions> synthetic_preset(std::string_view name);

// The hyper-parameters a model written with `options` has; throws INVALID_FIELD when the
// options cannot make a valid model (naming the option).
JAL_API GptOssConfig synthetic_config(const SyntheticGptOssOptions& options);

struct SyntheticModelSummary {
    GptOssConfig config;
    uint64_t file_bytes = 0;
    uint64_t parameters = 0;
    size_t tensors = 0;
};

// Called after each tensor part is written: bytes of tensor data so far, of all of it.
using SyntheticProgress = std::function<void(uint64_t done, uint64_t total)>;

// Writes the model to `path` (through a temporary file renamed at the end). The same
// options always give the same bytes.
JAL_API SyntheticModelSummary write_synthetic_gpt_oss(const std::string& path,
                                                      const SyntheticGptOssOptions& options,
                                                      const SyntheticProgress& progress = {});

}  // namespace jal::model
