// The JSON shape of everything jalctl reports. Natural units (W, A, V, °C, s, bytes),
// names that say the unit, masks as hex strings (64-bit values do not survive every JSON
// reader as numbers).
#pragma once

#include <nlohmann/json.hpp>

#include <jal/chip_function.hpp>

namespace jal::ctl {

using nlohmann::json;

std::string hex(uint64_t value, int digits = 0);
double milli(int64_t value);  // mW -> W, mA -> A, mV -> V, m°C -> °C, rounded to 0.001

json status_json(const jal::DeviceStatus& status);
json identify_json(const jal_identify& id);
json telemetry_json(const jal_telemetry& t);
json slice_map_json(const jal_slice_map& map);
json hbm_channel_json(uint32_t channel, const jal_hbm_channel_report& report);
json hbm_lane_json(uint32_t lane, const jal_hbm_lane_report& lane_report);
json event_json(const jal_log_event& event);
// One cabled fabric port of GET_LINK_REPORT.
json link_port_json(const jal_link_port_report& port);
const char* link_state_name(uint8_t state);
json post_entry_json(const jal_post_entry& entry);
// Device memory from GET_USAGE: total, used and free bytes and the used percentage.
json memory_json(const jal_usage& usage);
// "1.500 GiB", "512 MiB", "0 B": binary units, for tables.
std::string bytes_text(uint64_t bytes);

const char* slice_state_name(uint8_t state);
const char* hbm_channel_status_name(uint8_t status);
const char* severity_name(uint8_t severity);
const char* source_name(uint8_t source);
const char* rail_name(uint32_t rail);
// Fixed-size NUL-terminated device string, never read past its array.
template <size_t N>
std::string device_string(const char (&s)[N])
{
    size_t n = 0;
    while (n < N && s[n]) n++;
    return std::string(s, n);
}

}  // namespace jal::ctl
