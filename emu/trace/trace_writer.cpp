#include "emu/trace/trace_writer.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace jal::emu {

TraceWriter::TraceWriter(const std::string& path) : t0_(std::chrono::steady_clock::now())
{
    f_ = std::fopen(path.c_str(), "w");
    if (!f_)
        throw std::runtime_error("cannot write the trace " + path + ": " + std::strerror(errno));
    std::fputs("[\n", f_);
    // Where the wall-clock processes' zero is on the host's CLOCK_MONOTONIC (steady_clock),
    // so a host trace (libjal's, jal/trace.h) can be lined up with them.
    const auto origin_us =
        std::chrono::duration_cast<std::chrono::microseconds>(t0_.time_since_epoch()).count();
    event({{"ph", "i"},
           {"s", "g"},
           {"pid", 0},
           {"tid", 0},
           {"name", "clock origin"},
           {"cat", "clock"},
           {"ts", 0},
           {"args", {{"clock", "CLOCK_MONOTONIC"}, {"monotonic_us", origin_us}}}});
}

TraceWriter::~TraceWriter()
{
    close();
}

void TraceWriter::event(const nlohmann::json& e)
{
    // Dumped outside the lock: the slow part, and it needs nothing shared.
    const std::string text = e.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::lock_guard lock(m_);
    if (!f_) return;
    if (!first_) std::fputs(",\n", f_);
    first_ = false;
    std::fwrite(text.data(), 1, text.size(), f_);
}

void TraceWriter::close()
{
    std::lock_guard lock(m_);
    if (!f_) return;
    std::fputs("\n]\n", f_);
    std::fclose(f_);
    f_ = nullptr;
}

void TraceWriter::complete(int pid, int tid, std::string_view name, std::string_view cat,
                           double ts_us, double dur_us, nlohmann::json args)
{
    nlohmann::json e = {{"ph", "X"},  {"pid", pid},  {"tid", tid},   {"name", name},
                        {"cat", cat}, {"ts", ts_us}, {"dur", dur_us}};
    if (!args.is_null()) e["args"] = std::move(args);
    event(e);
}

void TraceWriter::instant(int pid, int tid, std::string_view name, std::string_view cat,
                          double ts_us, nlohmann::json args)
{
    nlohmann::json e = {{"ph", "i"},    {"s", "t"},   {"pid", pid}, {"tid", tid},
                        {"name", name}, {"cat", cat}, {"ts", ts_us}};
    if (!args.is_null()) e["args"] = std::move(args);
    event(e);
}

void TraceWriter::counter(int pid, std::string_view name, double ts_us, nlohmann::json values)
{
    event({{"ph", "C"}, {"pid", pid}, {"name", name}, {"ts", ts_us}, {"args", std::move(values)}});
}

void TraceWriter::name_process(int pid, std::string_view name, int sort_index)
{
    event({{"ph", "M"}, {"pid", pid}, {"name", "process_name"}, {"args", {{"name", name}}}});
    event({{"ph", "M"},
           {"pid", pid},
           {"name", "process_sort_index"},
           {"args", {{"sort_index", sort_index}}}});
}

void TraceWriter::name_thread(int pid, int tid, std::string_view name)
{
    event({{"ph", "M"},
           {"pid", pid},
           {"tid", tid},
           {"name", "thread_name"},
           {"args", {{"name", name}}}});
}

double TraceWriter::wall_us() const
{
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0_)
        .count();
}

}  // namespace jal::emu
