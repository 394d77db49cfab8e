#include "api_response.hpp"

namespace jal::serve {

namespace {

using nlohmann::json;

json reply_object(const ReplyHeader& h, bool chunk)
{
    const char* object =
        h.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
}

json finish_json(const char* finish_reason)
{
    return finish_reason ? json(finish_reason) : json(nullptr);
}

}  // namespace

json usage_json(const Usage& u)
{
    return {{"prompt_tokens", u.prompt_tokens},
            {"completion_tokens", u.completion_tokens},
            {"total_tokens", u.prompt_tokens + u.completion_tokens}};
}

json full_reply(const ReplyHeader& h, const ReplyDelta& all, const char* finish_reason,
                const Usage& usage)
{
    json j = reply_object(h, false);
    json choice = {{"index", 0}, {"finish_reason", finish_json(finish_reason)}};
    if (h.chat) {
        json message = {{"role", "assistant"}, {"content", all.content}};
        if (!all.reasoning.empty()) message["reasoning_content"] = all.reasoning;
        choice["message"] = message;
    } else {
        choice["text"] = all.content;
        choice["logprobs"] = nullptr;
    }
    choice["token_ids"] = all.token_ids;
    j["choices"] = json::array({choice});
    j["usage"] = usage_json(usage);
    return j;
}

json reply_chunk(const ReplyHeader& h, const ReplyDelta& delta, const char* finish_reason,
                 bool first)
{
    json j = reply_object(h, true);
    json choice = {{"index", 0}, {"finish_reason", finish_json(finish_reason)}};
    if (h.chat) {
        json d = json::object();
        if (first) d["role"] = "assistant";
        if (!delta.content.empty()) d["content"] = delta.content;
        if (!delta.reasoning.empty()) d["reasoning_content"] = delta.reasoning;
        choice["delta"] = d;
    } else {
        choice["text"] = delta.content;
        choice["logprobs"] = nullptr;
    }
    choice["token_ids"] = delta.token_ids;
    j["choices"] = json::array({choice});
    return j;
}

json usage_chunk(const ReplyHeader& h, const Usage& usage)
{
    json j = reply_object(h, true);
    j["choices"] = json::array();
    j["usage"] = usage_json(usage);
    return j;
}

}  // namespace jal::serve
