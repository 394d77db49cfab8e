#include "generation_plan.hpp"

#include <algorithm>
#include <random>

#include <fmt/format.h>

#include "api_error.hpp"

namespace jal::serve {

namespace {

std::vector<int32_t> prompt_ids(const ApiRequest& r, const ModelInfo& model, const TextCodec& codec)
{
    if (r.chat) {
        if (!codec.has_vocabulary())
            throw bad_request("this model has no vocabulary, so it cannot chat; send token ids "
                              "as the prompt of /v1/completions",
                              "messages");
        return codec.chat_prompt(r.messages);
    }
    if (r.prompt_text) {
        if (!codec.has_vocabulary())
            throw bad_request("this model has no vocabulary; send the prompt as an array of "
                              "token ids",
                              "prompt");
        std::vector<int32_t> ids = codec.encode(*r.prompt_text);
        if (ids.empty()) throw bad_request("'prompt' must not be empty", "prompt");
        return ids;
    }
    for (int32_t id : r.prompt_ids)
        if (static_cast<uint32_t>(id) >= model.n_vocab)
            throw bad_request(fmt::format("token id {} in 'prompt' is not below the vocabulary "
                                          "size {}",
                                          id, model.n_vocab),
                              "prompt");
    return r.prompt_ids;
}

// The prompt and every generated token but the last take a position of the KV cache.
uint32_t reply_length(const ApiRequest& r, size_t prompt, const ModelInfo& model)
{
    if (prompt > model.n_ctx)
        throw bad_request(
            fmt::format("the prompt has {} tokens; the context holds {}", prompt, model.n_ctx),
            r.chat ? "messages" : "prompt");
    const uint32_t room = model.n_ctx - static_cast<uint32_t>(prompt) + 1;
    if (!r.max_tokens) return r.chat ? room : std::min(kDefaultCompletionTokens, room);
    if (*r.max_tokens > room)
        throw bad_request(fmt::format("a {}-token prompt and max_tokens {} need {} positions; "
                                      "the context holds {}",
                                      prompt, *r.max_tokens, prompt + *r.max_tokens - 1,
                                      model.n_ctx),
                          "max_tokens");
    return *r.max_tokens;
}

}  // namespace

GenerationParams plan_generation(const ApiRequest& r, const ModelInfo& model,
                                 const TextCodec& codec)
{
    if (r.model && *r.model != model.id)
        throw bad_request(fmt::format("the model '{}' does not exist; this server serves '{}'",
                                      *r.model, model.id),
                          "model");
    if (!r.stop.empty() && !codec.has_vocabulary())
        throw bad_request("this model has no vocabulary, so 'stop' strings cannot match", "stop");
    GenerationParams p;
    p.prompt = prompt_ids(r, model, codec);
    p.max_tokens = reply_length(r, p.prompt.size(), model);
    p.sampling.temperature = r.temperature;
    p.sampling.top_p = r.top_p;
    p.sampling.seed = r.seed ? *r.seed : std::random_device{}();
    if (!r.ignore_eos) p.stop_ids = r.chat ? codec.chat_stop_ids() : codec.end_of_text_ids();
    return p;
}

}  // namespace jal::serve
