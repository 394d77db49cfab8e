#include "api_request.hpp"

#include <cmath>
#include <limits>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "api_error.hpp"

namespace jal::serve {

namespace {

using nlohmann::json;

// The field, or nullptr when it is absent or null (OpenAI clients send null for "unset").
const json* field(const json& body, const char* name)
{
    auto it = body.find(name);
    return it == body.end() || it->is_null() ? nullptr : &*it;
}

ApiError wrong_type(const char* name, const char* expected)
{
    return bad_request(fmt::format("'{}' must be {}", name, expected), name);
}

bool get_bool(const json& body, const char* name, bool fallback)
{
    const json* v = field(body, name);
    if (!v) return fallback;
    if (!v->is_boolean()) throw wrong_type(name, "a boolean");
    return v->get<bool>();
}

std::optional<double> get_number(const json& body, const char* name)
{
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    if (!v->is_number()) throw wrong_type(name, "a number");
    return v->get<double>();
}

float get_float_in(const json& body, const char* name, float fallback, double lo, double hi)
{
    std::optional<double> v = get_number(body, name);
    if (!v) return fallback;
    if (!(*v >= lo && *v <= hi))
        throw bad_request(fmt::format("'{}' must be between {} and {}", name, lo, hi), name);
    return static_cast<float>(*v);
}

std::optional<uint64_t> get_unsigned(const json& body, const char* name)
{
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    if (v->is_number_unsigned()) return v->get<uint64_t>();
    if (v->is_number_integer()) throw bad_request(fmt::format("'{}' must be >= 0", name), name);
    throw wrong_type(name, "an integer");
}

std::optional<std::string> get_string(const json& body, const char* name)
{
    const json* v = field(body, name);
    if (!v) return std::nullopt;
    if (!v->is_string()) throw wrong_type(name, "a string");
    return v->get<std::string>();
}

// A token id array: [1, 2, 3]. (A batch of prompts, [[1, 2], [3]], is not served.)
std::vector<int32_t> token_ids(const json& v, const char* name)
{
    std::vector<int32_t> ids;
    for (const json& id : v) {
        if (!id.is_number_integer())
            throw bad_request(
                fmt::format("'{}' must be a string or an array of token ids (integers); a batch "
                            "of several prompts is not supported",
                            name),
                name);
        const int64_t x = id.get<int64_t>();
        if (x < 0 || x > std::numeric_limits<int32_t>::max())
            throw bad_request(fmt::format("token id {} in '{}' is out of range", x, name), name);
        ids.push_back(static_cast<int32_t>(x));
    }
    if (ids.empty()) throw bad_request(fmt::format("'{}' must not be empty", name), name);
    return ids;
}

void parse_prompt(const json& body, ApiRequest& r)
{
    const json* p = field(body, "prompt");
    if (!p) throw bad_request("'prompt' is required", "prompt");
    if (p->is_string())
        r.prompt_text = p->get<std::string>();
    else if (p->is_array())
        r.prompt_ids = token_ids(*p, "prompt");
    else
        throw wrong_type("prompt", "a string or an array of token ids");
}

void parse_messages(const json& body, ApiRequest& r)
{
    const json* m = field(body, "messages");
    if (!m) throw bad_request("'messages' is required", "messages");
    if (!m->is_array() || m->empty())
        throw wrong_type("messages", "a non-empty array of {role, content} objects");
    for (const json& msg : *m) {
        if (!msg.is_object() || !msg.contains("role") || !msg["role"].is_string())
            throw bad_request("each message must be an object with a string 'role'", "messages");
        const json* content = field(msg, "content");
        if (content && !content->is_string())
            throw bad_request("a message's 'content' must be a string", "messages");
        r.messages.push_back(
            {msg["role"].get<std::string>(), content ? content->get<std::string>() : ""});
    }
}

void parse_stop(const json& body, ApiRequest& r)
{
    const json* s = field(body, "stop");
    if (!s) return;
    if (s->is_string()) {
        r.stop.push_back(s->get<std::string>());
        return;
    }
    if (!s->is_array()) throw wrong_type("stop", "a string or an array of strings");
    for (const json& x : *s) {
        if (!x.is_string()) throw wrong_type("stop", "a string or an array of strings");
        r.stop.push_back(x.get<std::string>());
    }
    std::erase(r.stop, std::string());
}

void parse_sampling(const json& body, ApiRequest& r)
{
    r.temperature = get_float_in(body, "temperature", 1.0f, 0, 2);
    r.top_p = get_float_in(body, "top_p", 1.0f, 0, 1);
    if (r.top_p == 0) throw bad_request("'top_p' must be greater than 0", "top_p");
    if (auto seed = field(body, "seed")) {
        if (!seed->is_number_integer()) throw wrong_type("seed", "an integer");
        r.seed = static_cast<uint64_t>(seed->get<int64_t>());  // negative seeds wrap, as a hash
    }
    if (auto n = get_unsigned(body, "n"); n && *n != 1)
        throw bad_request("only 'n' = 1 is supported", "n");
}

void parse_lengths(const json& body, ApiRequest& r)
{
    // Chat clients send the newer name; it wins when both are given.
    std::optional<uint64_t> n = get_unsigned(body, "max_tokens");
    if (r.chat)
        if (auto c = get_unsigned(body, "max_completion_tokens")) n = c;
    if (n) {
        if (*n == 0 || *n > std::numeric_limits<uint32_t>::max())
            throw bad_request("'max_tokens' must be at least 1", "max_tokens");
        r.max_tokens = static_cast<uint32_t>(*n);
    }
}

}  // namespace

ApiRequest parse_api_request(std::string_view text, bool chat)
{
    json body = json::parse(text, nullptr, false);
    if (body.is_discarded()) throw bad_request("the request body is not valid JSON");
    if (!body.is_object()) throw bad_request("the request body must be a JSON object");
    ApiRequest r;
    r.chat = chat;
    r.model = get_string(body, "model");
    if (chat)
        parse_messages(body, r);
    else
        parse_prompt(body, r);
    parse_lengths(body, r);
    parse_sampling(body, r);
    parse_stop(body, r);
    r.ignore_eos = get_bool(body, "ignore_eos", false);
    r.stream = get_bool(body, "stream", false);
    if (const json* so = field(body, "stream_options")) {
        if (!so->is_object()) throw wrong_type("stream_options", "an object");
        r.include_usage = get_bool(*so, "include_usage", false);
    }
    return r;
}

}  // namespace jal::serve
