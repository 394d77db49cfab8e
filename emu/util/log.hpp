// The emulator's log: firmware console lines, POST codes and model events, one line each,
// to stderr or a file. Thread-safe; lines from different chips never interleave.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>

namespace jal::emu {

enum class LogLevel { debug, info, warn, error };

class Log {
public:
    // Opens `path` for appending, or stderr when empty. Throws std::runtime_error.
    static void open(const std::string& path);
    static void set_level(LogLevel level);
    static bool enabled(LogLevel level);
    static void write(LogLevel level, std::string_view line);
};

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> f, Args&&... args)
{
    if (Log::enabled(level)) Log::write(level, fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace jal::emu
