#include "firmware/host/journal.hpp"

#include "firmware/hal/hal.hpp"
#include "firmware/sys/console.hpp"
#include "firmware/util/text.hpp"

namespace jal::fw::host {

namespace {
const char* source_name(std::uint8_t source)
{
    switch (source) {
    case JAL_SRC_BOOT:
        return "boot";
    case JAL_SRC_SLICE:
        return "slice";
    case JAL_SRC_HBM:
        return "hbm";
    case JAL_SRC_POWER:
        return "power";
    case JAL_SRC_ADMIN:
        return "admin";
    case JAL_SRC_WATCHDOG:
        return "wdt";
    default:
        return "fw";
    }
}
const char* severity_name(std::uint8_t severity)
{
    switch (severity) {
    case JAL_SEV_DEBUG:
        return "debug";
    case JAL_SEV_INFO:
        return "info";
    case JAL_SEV_WARN:
        return "warn";
    case JAL_SEV_ERROR:
        return "error";
    default:
        return "fatal";
    }
}
}  // namespace

void Journal::event(std::uint8_t source, std::uint8_t severity, std::uint16_t code,
                    const char* text, std::initializer_list<std::uint32_t> args)
{
    log_.add(hal::now_us(), source, severity, code, text, {args.begin(), args.size()});
    if (severity < JAL_SEV_INFO) return;
    util::LineBuffer line;
    line.str(source_name(source)).str(": ").str(severity_name(severity)).str(": ").str(text);
    for (std::uint32_t a : args) line.ch(' ').dec(a);
    sys::console_line(line.c_str());
}

void Journal::console(const char* text)
{
    sys::console_line(text);
}

}  // namespace jal::fw::host
