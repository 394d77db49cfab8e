#include "host_trace.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include <jal/error.hpp>

#include "runtime_objects.hpp"

namespace jal::runtime::detail {

namespace {

long thread_id()
{
    return static_cast<long>(::syscall(SYS_gettid));
}

std::string program_name()
{
    const char* n = program_invocation_short_name;
    return n && *n ? n : "process";
}

}  // namespace

HostTrace& HostTrace::instance()
{
    static HostTrace trace;
    static std::once_flag env_once;
    std::call_once(env_once, [] {
        const char* path = std::getenv("JAL_TRACE");
        if (!path || !*path) return;
        try {
            trace.start(path);
        } catch (const std::exception& e) {
            log_message(1, std::string("libjal: JAL_TRACE: ") + e.what());
        }
    });
    return trace;
}

double HostTrace::us(std::chrono::steady_clock::time_point t) const
{
    return std::chrono::duration<double, std::micro>(t - origin_).count();
}

void HostTrace::start(const std::string& path)
{
    stop();
    std::lock_guard lock(m_);
    f_ = std::fopen(path.c_str(), "w");
    if (!f_)
        throw Error(JAL_STATUS_INVALID_FIELD,
                    "cannot write the trace " + path + ": " + std::strerror(errno));
    first_ = true;
    named_threads_.clear();
    origin_ = std::chrono::steady_clock::now();
    const auto origin_us =
        std::chrono::duration_cast<std::chrono::microseconds>(origin_.time_since_epoch()).count();
    const int pid = static_cast<int>(::getpid());
    std::fputs("[\n", f_);
    write(fmt::format(R"({{"ph":"i","s":"g","pid":{},"tid":0,"name":"clock origin","cat":"clock",)"
                      R"("ts":0,"args":{{"clock":"CLOCK_MONOTONIC","monotonic_us":{}}}}})",
                      pid, origin_us));
    write(fmt::format(R"({{"ph":"M","pid":{},"name":"process_name","args":{{"name":)"
                      R"j("libjal: {} (pid {}, host wall clock)"}}}})j",
                      pid, program_name(), pid));
    active_.store(true, std::memory_order_relaxed);
}

void HostTrace::stop()
{
    active_.store(false, std::memory_order_relaxed);
    std::lock_guard lock(m_);
    if (!f_) return;
    std::fputs("\n]\n", f_);
    std::fclose(f_);
    f_ = nullptr;
}

void HostTrace::write(const std::string& event)
{
    if (!first_) std::fputs(",\n", f_);
    first_ = false;
    std::fwrite(event.data(), 1, event.size(), f_);
}

void HostTrace::span(const char* name, const char* cat, std::chrono::steady_clock::time_point t0,
                     std::chrono::steady_clock::time_point t1, const std::string& args_json)
{
    const long tid = thread_id();
    const int pid = static_cast<int>(::getpid());
    std::lock_guard lock(m_);
    if (!f_) return;
    if (named_threads_.insert(tid).second)
        write(fmt::format(R"({{"ph":"M","pid":{},"tid":{},"name":"thread_name",)"
                          R"("args":{{"name":"thread {}"}}}})",
                          pid, tid, tid));
    write(fmt::format(R"({{"ph":"X","pid":{},"tid":{},"name":"{}","cat":"{}","ts":{:.3f},)"
                      R"("dur":{:.3f},"args":{{{}}}}})",
                      pid, tid, name, cat, us(t0), us(t1) - us(t0), args_json));
}

HostSpan::~HostSpan()
{
    if (!on_) return;
    const auto t1 = std::chrono::steady_clock::now();
    std::string args;
    for (unsigned i = 0; i < n_; ++i)
        args += fmt::format("{}\"{}\":{}", i ? "," : "", args_[i].key, args_[i].value);
    HostTrace::instance().span(name_, cat_, t0_, t1, args);
}

}  // namespace jal::runtime::detail
