// POST /v1/completions and /v1/chat/completions: parse and plan the request, hand it to
// the engine, and answer with the whole reply or stream it as server-sent events. A
// streamed reply whose client goes away (a write fails) cancels its generation.
#pragma once

#include <atomic>
#include <cstdint>

#include "engine_pool.hpp"
#include "generation_plan.hpp"
#include "http_io.hpp"
#include "serve_metrics.hpp"
#include "text_codec.hpp"

namespace jal::serve {

// What the handlers share, for the server's lifetime.
struct ServeContext {
    EnginePool& engine;
    Metrics& metrics;
    const TextCodec& codec;
    ModelInfo model;
    uint32_t max_in_flight = 0;
    std::atomic<uint64_t> next_id{1};
};

net::awaitable<Outcome> serve_completion(ServeContext& ctx, tcp::socket& socket,
                                         const HttpRequest& req, bool chat);

}  // namespace jal::serve
