#include "stop_matcher.hpp"

#include <algorithm>

namespace jal::serve {

StopMatcher::Result StopMatcher::push(std::string_view text)
{
    if (stopped_) return {{}, true};
    held_ += text;
    size_t first = std::string::npos;
    for (const std::string& s : stops_) first = std::min(first, held_.find(s));
    if (first != std::string::npos) {
        stopped_ = true;
        Result r{held_.substr(0, first), true};
        held_.clear();
        return r;
    }
    // Keep the longest tail that is a proper prefix of some stop string.
    size_t keep = 0;
    for (const std::string& s : stops_)
        for (size_t n = std::min(s.size() - 1, held_.size()); n > keep; n--)
            if (held_.compare(held_.size() - n, n, s, 0, n) == 0) {
                keep = n;
                break;
            }
    Result r{held_.substr(0, held_.size() - keep), false};
    held_.erase(0, held_.size() - keep);
    return r;
}

std::string StopMatcher::flush()
{
    std::string rest;
    rest.swap(held_);
    return stopped_ ? std::string() : rest;
}

}  // namespace jal::serve
