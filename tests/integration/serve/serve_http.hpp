// HTTP helpers of the jal-serve tests: curl with the status and headers captured, the
// server-sent events of a streamed reply, Prometheus samples, polling for a condition.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace jal::test {

struct HttpReply {
    unsigned status = 0;
    std::string body;
    std::string headers;
};

// curl -s, the status and headers captured too.
HttpReply curl(const std::string& url, const std::vector<std::string>& extra = {});
HttpReply post(const std::string& url, const std::string& body);

// The value of an unlabelled sample in Prometheus text, or -1.
double metric(const std::string& text, const std::string& name);

// Polls `done` with a growing interval, up to a minute.
bool wait_for(const std::function<bool()>& done);

// The events of a server-sent-event body: the JSON of each "data:" line, and whether the
// last one was [DONE].
struct Events {
    std::vector<nlohmann::json> chunks;
    bool done = false;
    bool well_formed = true;
};
Events parse_events(const std::string& body);

}  // namespace jal::test
