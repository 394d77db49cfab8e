// Finds the request's `stop` strings in generated text as it streams: text that could be
// the start of a stop string is held back until the next piece decides, so a reply never
// shows part of a stop string, nor anything after one.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace jal::serve {

class StopMatcher {
public:
    explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
    struct Result {
        std::string text;      // safe to show
        bool stopped = false;  // a stop string matched; `text` ends before it
    };
    Result push(std::string_view text);
    // The held-back text, at the end of the reply.
    std::string flush();

private:
    std::vector<std::string> stops_;
    std::string held_;
    bool stopped_ = false;
};

}  // namespace jal::serve
