// The body of POST /v1/completions and /v1/chat/completions, parsed and type-checked
// (docs/serving.md, "API"). Checks that need the model (context length, vocabulary) are
// generation_plan.hpp's.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "text_codec.hpp"

namespace jal::serve {

struct ApiRequest {
    bool chat = false;
    std::optional<std::string> model;
    // Completions: a prompt is text or token ids (the OpenAI API takes both).
    std::optional<std::string> prompt_text;
    std::vector<int32_t> prompt_ids;
    std::vector<ChatTurn> messages;  // chat
    std::optional<uint32_t> max_tokens;
    float temperature = 1.0f;  // OpenAI's default; 0: greedy
    float top_p = 1.0f;
    std::optional<uint64_t> seed;
    std::vector<std::string> stop;
    bool ignore_eos = false;
    bool stream = false;
    bool include_usage = false;  // stream_options.include_usage
};

// Throws ApiError (400) naming the offending field.
ApiRequest parse_api_request(std::string_view body, bool chat);

}  // namespace jal::serve
