// libjal's host-side trace (jal/trace.h): spans of the C API's calls, written as Chrome
// JSON events on the host's CLOCK_MONOTONIC. When no trace runs a span costs one relaxed
// atomic load.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <set>
#include <string>

namespace jal::runtime::detail {

class HostTrace {
public:
    // The process's trace; the first call starts one if JAL_TRACE names a file.
    static HostTrace& instance();
    static bool enabled() { return instance().active_.load(std::memory_order_relaxed); }

    // Throws jal::Error(INVALID_FIELD) naming the path when it cannot be written.
    void start(const std::string& path);
    void stop();

    // A finished span: "X" event on the calling thread's track.
    void span(const char* name, const char* cat, std::chrono::steady_clock::time_point t0,
              std::chrono::steady_clock::time_point t1, const std::string& args_json);

    ~HostTrace() { stop(); }

private:
    HostTrace() = default;
    void write(const std::string& event);  // under m_
    double us(std::chrono::steady_clock::time_point t) const;

    std::atomic<bool> active_{false};
    std::mutex m_;
    std::FILE* f_ = nullptr;
    bool first_ = true;
    std::chrono::steady_clock::time_point origin_;
    std::set<long> named_threads_;
};

// RAII span of one C API call; args (up to four integers) are recorded only when tracing.
class HostSpan {
public:
    explicit HostSpan(const char* name, const char* cat = "api")
        : name_(name), cat_(cat), on_(HostTrace::enabled())
    {
        if (on_) t0_ = std::chrono::steady_clock::now();
    }
    ~HostSpan();
    HostSpan(const HostSpan&) = delete;
    HostSpan& operator=(const HostSpan&) = delete;

    void arg(const char* key, uint64_t value)
    {
        if (on_ && n_ < 4) args_[n_++] = {key, value};
    }

private:
    struct Arg {
        const char* key;
        uint64_t value;
    };
    const char* name_;
    const char* cat_;
    bool on_;
    unsigned n_ = 0;
    Arg args_[4]{};
    std::chrono::steady_clock::time_point t0_;
};

}  // namespace jal::runtime::detail
