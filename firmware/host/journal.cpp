#include "firmware/host/journal.hpp"

#include "firmware/hal/hal.hpp"
#include "firmware/sys/console.hpp"
#include "firmware/util/text.hpp"
#include "jal/hw/events.h"

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
// " name=value" per argument, decoded as the contract's table says (the same table
// jalctl log uses), so the emulator's log reads like the host's.
void append_args(util::LineBuffer& line, std::uint16_t code,
                 std::initializer_list<std::uint32_t> args)
{
    const jal_event_desc* desc = jal_event_describe(code);
    std::size_t i = 0;
    for (std::uint32_t a : args) {
        const jal_event_arg_desc* arg = desc && i < 4 ? &desc->args[i] : nullptr;
        ++i;
        if (!arg || !arg->name) {
            line.ch(' ').dec(a);
            continue;
        }
        line.ch(' ').str(arg->name).ch('=');
        if (const char* name = jal_event_arg_name(arg->kind, a)) {
            if (arg->kind == JAL_ARG_POST_CODE) line.hex(a).ch('/');
            line.str(name);
        } else if (arg->kind == JAL_ARG_HEX) {
            line.hex(a);
        } else if (arg->kind == JAL_ARG_MC) {
            line.sdec(static_cast<std::int32_t>(a)).str(jal_event_arg_unit(arg->kind));
        } else {
            line.dec(a).str(jal_event_arg_unit(arg->kind));
        }
    }
}
}  // namespace

void Journal::event(std::uint8_t source, std::uint8_t severity, std::uint16_t code,
                    const char* text, std::initializer_list<std::uint32_t> args)
{
    // Debug events are housekeeping (a client enabling its admin queue): they go to the
    // console only, so polling clients cannot push boot events out of the 256-entry ring.
    if (severity >= JAL_SEV_INFO)
        log_.add(hal::now_us(), source, severity, code, text, {args.begin(), args.size()});
    util::LineBuffer line;
    line.str(source_name(source)).str(": ").str(severity_name(severity)).str(": ").str(text);
    append_args(line, code, args);
    sys::console_line(line.c_str());
}

void Journal::console(const char* text)
{
    sys::console_line(text);
}

}  // namespace jal::fw::host
