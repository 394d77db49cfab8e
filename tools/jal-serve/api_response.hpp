// The JSON of completion replies, whole or as server-sent-event chunks, in the OpenAI
// shapes (docs/serving.md, "API"). Every choice also carries the generated "token_ids":
// the only output of a model without a vocabulary.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "reply_text.hpp"

namespace jal::serve {

struct ReplyHeader {
    std::string id;  // "cmpl-..." / "chatcmpl-..."
    int64_t created = 0;
    std::string model;
    bool chat = false;
};

struct Usage {
    uint32_t prompt_tokens = 0;
    uint32_t completion_tokens = 0;
};

nlohmann::json usage_json(const Usage& u);

// The whole reply (no streaming). `finish_reason`: "length" or "stop".
nlohmann::json full_reply(const ReplyHeader& h, const ReplyDelta& all, const char* finish_reason,
                          const Usage& usage);

// One chunk of a streamed reply: the delta, and the finish reason on the last one (nullptr
// before). A chat stream's first chunk carries the assistant role.
nlohmann::json reply_chunk(const ReplyHeader& h, const ReplyDelta& delta, const char* finish_reason,
                           bool first);

// The chunk with the usage that stream_options.include_usage asks for (no choices).
nlohmann::json usage_chunk(const ReplyHeader& h, const Usage& usage);

}  // namespace jal::serve
