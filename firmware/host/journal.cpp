#include "firmware/host/journal.hpp"

#include "firmware/hal/hal.hpp"
#include "firmware/sys/console.hpp"
#include "firmware/util/text.hpp"
#include "jal/hw/events.h"
#include "jal/hw/mgmt.h"

#include <cstring>

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
    case JAL_SRC_LINK:
        return "link";
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
        retain(log_.add(hal::now_us(), source, severity, code, text, {args.begin(), args.size()}));
    util::LineBuffer line;
    line.str(source_name(source)).str(": ").str(severity_name(severity)).str(": ").str(text);
    append_args(line, code, args);
    sys::console_line(line.c_str());
}

void Journal::retain(std::uint32_t seq)
{
    std::uint32_t words[sizeof(jal_log_event) / 4];
    std::memcpy(words, &log_.at(seq), sizeof words);
    for (std::uint32_t w = 0; w < sizeof words / 4; ++w)
        hal::write32(JAL_RLOG_WORD(seq % JAL_RLOG_ENTRIES, w), words[w]);
    hal::write32(JAL_SYS_RETAIN(JAL_RETAIN_LOG_NEXT), seq + 2);
}

std::uint32_t Journal::restore_retained()
{
    const std::uint32_t stored = hal::read32(JAL_SYS_RETAIN(JAL_RETAIN_LOG_NEXT));
    if (stored == 0 || hal::read32(JAL_SYS_RESET_CAUSE) == JAL_RESET_CAUSE_POWER_ON) return 0;
    const std::uint32_t next = stored - 1;
    const std::uint32_t first = next > JAL_RLOG_ENTRIES ? next - JAL_RLOG_ENTRIES : 0;
    std::uint32_t restored = 0;
    for (std::uint32_t seq = first; seq < next; ++seq) {
        std::uint32_t words[sizeof(jal_log_event) / 4];
        for (std::uint32_t w = 0; w < sizeof words / 4; ++w)
            words[w] = hal::read32(JAL_RLOG_WORD(seq % JAL_RLOG_ENTRIES, w));
        jal_log_event e;
        std::memcpy(&e, words, sizeof e);
        if (e.seq != seq) continue;  // never written, or torn by the reset: skip it
        log_.restore(e);
        ++restored;
    }
    return restored;
}

void Journal::console(const char* text)
{
    sys::console_line(text);
}

}  // namespace jal::fw::host
