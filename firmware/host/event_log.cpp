#include "firmware/host/event_log.hpp"

#include "firmware/util/text.hpp"

namespace jal::fw::host {

std::uint32_t EventLog::add(std::uint64_t timestamp_us, std::uint8_t source, std::uint8_t severity,
                            std::uint16_t code, const char* text,
                            std::span<const std::uint32_t> args)
{
    const std::uint32_t seq = next_seq_++;
    jal_log_event& e = ring_[seq % kEntries];
    e = jal_log_event{};
    e.timestamp_us = timestamp_us;
    e.seq = seq;
    e.code = code;
    e.severity = severity;
    e.source = source;
    for (std::size_t i = 0; i < args.size() && i < 4; ++i) e.args[i] = args[i];
    util::copy_string(e.text, text);
    return seq;
}

void EventLog::restore(const jal_log_event& e)
{
    if (next_seq_ == 0 && first_seq_ == 0) first_seq_ = e.seq;
    ring_[e.seq % kEntries] = e;
    next_seq_ = e.seq + 1;
}

}  // namespace jal::fw::host
