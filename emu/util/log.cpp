#include "emu/util/log.hpp"

#include <cerrno>
#include <cstring>
#include <mutex>
#include <stdexcept>

namespace jal::emu {

namespace {
std::mutex log_mutex;
FILE* log_file = nullptr;
LogLevel min_level = LogLevel::info;

const char* level_tag(LogLevel l)
{
    switch (l) {
    case LogLevel::debug:
        return "debug";
    case LogLevel::info:
        return "info";
    case LogLevel::warn:
        return "warn";
    case LogLevel::error:
        return "error";
    }
    return "?";
}
}  // namespace

void Log::open(const std::string& path)
{
    std::lock_guard lock(log_mutex);
    if (path.empty()) return;
    FILE* f = std::fopen(path.c_str(), "a");
    if (!f) throw std::runtime_error("cannot open log file " + path + ": " + std::strerror(errno));
    std::setvbuf(f, nullptr, _IOLBF, 0);
    log_file = f;
}

void Log::set_level(LogLevel level)
{
    min_level = level;
}
bool Log::enabled(LogLevel level)
{
    return level >= min_level;
}

void Log::write(LogLevel level, std::string_view line)
{
    std::lock_guard lock(log_mutex);
    FILE* f = log_file ? log_file : stderr;
    fmt::print(f, "jal-emu {}: {}\n", level_tag(level), line);
    std::fflush(f);
}

}  // namespace jal::emu
