// A point in (steady) time by which something must have happened; keeps the "how long is
// left" arithmetic for poll(2)-style waits in one place.
#pragma once

#include <algorithm>
#include <chrono>
#include <string>

namespace jal::util {

class Deadline {
public:
    using clock = std::chrono::steady_clock;

    explicit Deadline(std::chrono::milliseconds budget)
        : at_(clock::now() + budget), budget_(budget)
    {}

    bool expired() const { return clock::now() >= at_; }
    std::chrono::milliseconds budget() const { return budget_; }

    // Milliseconds left, rounded up so a wait never ends early, capped at `cap`.
    int poll_ms(std::chrono::milliseconds cap = std::chrono::milliseconds::max()) const
    {
        auto left = std::chrono::ceil<std::chrono::milliseconds>(at_ - clock::now());
        left = std::clamp(left, std::chrono::milliseconds(0), cap);
        return static_cast<int>(std::min<long long>(left.count(), 1 << 30));
    }

private:
    clock::time_point at_;
    std::chrono::milliseconds budget_;
};

// "5 s", "250 ms": durations as error messages print them.
inline std::string describe(std::chrono::milliseconds d)
{
    if (d.count() % 1000 == 0) return std::to_string(d.count() / 1000) + " s";
    return std::to_string(d.count()) + " ms";
}

}  // namespace jal::util
