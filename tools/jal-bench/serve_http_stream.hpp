// One streamed completion over HTTP/1.1 (Boost.Beast, blocking, on the calling thread):
// the request's timings from its server-sent events. Also a plain GET.
#pragma once

#include <chrono>
#include <string>

#include "serve_stats.hpp"
#include "serve_workload.hpp"

namespace jal::bench {

struct HttpEndpoint {
    std::string host, port;
};

// POSTs the request to /v1/completions (ignore_eos, greedy, stream with usage) and reads
// the stream; times are seconds since `epoch`. A failure is reported in `error`.
RequestTiming stream_completion(const HttpEndpoint& at, const BenchRequest& request,
                                const std::string& model,
                                std::chrono::steady_clock::time_point epoch);

// GET `target`: the body of a 200 reply; throws std::runtime_error otherwise.
std::string http_get(const HttpEndpoint& at, const std::string& target);

}  // namespace jal::bench
