// The event log ring read by GET_LOG(JAL_LOG_EVENTS). Sequence numbers only grow; when
// the ring wraps the oldest entries are overwritten and a reader asking for them is told
// how many it lost.
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "jal/hw/admin.h"

namespace jal::fw::host {

class EventLog {
public:
    static constexpr std::uint32_t kEntries = 256;

    // Appends an event; returns its sequence number.
    std::uint32_t add(std::uint64_t timestamp_us, std::uint8_t source, std::uint8_t severity,
                      std::uint16_t code, const char* text,
                      std::span<const std::uint32_t> args = {});

    // An entry kept from the previous boot (the retained log), in ascending seq order
    // before anything of this boot is added: numbering continues after it.
    void restore(const jal_log_event& e);

    std::uint32_t next_seq() const { return next_seq_; }
    std::uint32_t oldest_seq() const
    {
        const std::uint32_t wrapped = next_seq_ > kEntries ? next_seq_ - kEntries : 0;
        return wrapped > first_seq_ ? wrapped : first_seq_;
    }
    // Entry with sequence number seq; valid only for oldest_seq() <= seq < next_seq().
    const jal_log_event& at(std::uint32_t seq) const { return ring_[seq % kEntries]; }

private:
    std::array<jal_log_event, kEntries> ring_{};
    std::uint32_t next_seq_ = 0;
    std::uint32_t first_seq_ = 0;  // the oldest entry this boot has (restored ones count)
};

}  // namespace jal::fw::host
