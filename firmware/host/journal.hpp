// One place to report what happened: every event goes to the event log ring, and the
// notable ones (info and above) also become a console line, so the host-readable log and
// the emulator's firmware log tell the same story.
#pragma once

#include <cstdint>
#include <initializer_list>

#include "firmware/host/event_log.hpp"

namespace jal::fw::host {

class Journal {
public:
    explicit Journal(EventLog& log) : log_(log) {}

    void event(std::uint8_t source, std::uint8_t severity, std::uint16_t code, const char* text,
               std::initializer_list<std::uint32_t> args = {});
    // A console line that is not an event (progress text).
    void console(const char* text);
    // At boot, before the first event: takes back the previous boot's events from the
    // retained log (RLOG), unless the chip was powered on. Returns how many.
    std::uint32_t restore_retained();

    EventLog& log() { return log_; }

private:
    void retain(std::uint32_t seq);

    EventLog& log_;
};

}  // namespace jal::fw::host
