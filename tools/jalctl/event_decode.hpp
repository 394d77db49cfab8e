// Event arguments by name (include/jal/hw/events.h): what `jalctl log` prints after each
// event's text, and the "fields" object of its --json.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include <jal/hw/admin.h>

namespace jal::ctl {

// The event's name ("hbm_channel_failed"), or "0x0712" for a code this build does not know.
std::string event_name(const jal_log_event& e);
// Its arguments in natural units: {"channel": 100, "reason": "too_many_dead_lanes",
// "power_w": 812.5, ...}; for an unknown code {"arg0": .., "arg1": ..} (the non-zero ones).
nlohmann::json event_fields(const jal_log_event& e);
// The same as text: "channel=100 dead_lanes=5 reason=too_many_dead_lanes".
std::string event_fields_text(const jal_log_event& e);
// "0x0040 (slice reset release)".
std::string post_code_text(uint32_t post_code);

}  // namespace jal::ctl
