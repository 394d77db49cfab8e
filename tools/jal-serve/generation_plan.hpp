// A parsed request checked against the served model and turned into what the engine runs:
// the prompt's ids, the length, sampling and stop ids (docs/serving.md, "Errors").
#pragma once

#include <cstdint>
#include <string>

#include "api_request.hpp"
#include "job.hpp"
#include "text_codec.hpp"

namespace jal::serve {

struct ModelInfo {
    std::string id;  // the name clients pass as "model"
    uint32_t n_vocab = 0;
    uint32_t n_ctx = 0;  // positions of one sequence's KV cache
};

// The tokens a completion reply gets when the request names no max_tokens (OpenAI's).
inline constexpr uint32_t kDefaultCompletionTokens = 16;

// Throws ApiError (400) for an unknown model, text without a vocabulary, ids outside the
// vocabulary, or a prompt and length the context cannot hold.
GenerationParams plan_generation(const ApiRequest& request, const ModelInfo& model,
                                 const TextCodec& codec);

}  // namespace jal::serve
