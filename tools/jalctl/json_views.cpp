#include "json_views.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <jal/hw/chip.h>
#include <jal/hw/events.h>

#include "event_decode.hpp"

namespace jal::ctl {

std::string hex(uint64_t value, int digits)
{
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%0*llx", digits, static_cast<unsigned long long>(value));
    return buf;
}

double milli(int64_t value)
{
    return std::round(static_cast<double>(value)) / 1000.0;
}

const char* slice_state_name(uint8_t state)
{
    switch (state) {
    case JAL_SLICE_ENABLED:
        return "enabled";
    case JAL_SLICE_FUSED:
        return "fused";
    case JAL_SLICE_FAILED_BIST:
        return "failed_bist";
    case JAL_SLICE_BIST_TIMEOUT:
        return "bist_timeout";
    case JAL_SLICE_NO_MEMORY:
        return "no_memory";
    }
    return "unknown";
}

const char* hbm_channel_status_name(uint8_t status)
{
    switch (status) {
    case JAL_HBM_CH_UNTRAINED:
        return "untrained";
    case JAL_HBM_CH_OK:
        return "ok";
    case JAL_HBM_CH_REPAIRED:
        return "repaired";
    case JAL_HBM_CH_FAILED:
        return "failed";
    }
    return "unknown";
}

const char* severity_name(uint8_t severity)
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
    case JAL_SEV_FATAL:
        return "fatal";
    }
    return "unknown";
}

const char* source_name(uint8_t source)
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
        return "watchdog";
    case JAL_SRC_LINK:
        return "link";
    }
    return "unknown";
}

const char* rail_name(uint32_t rail)
{
    switch (rail) {
    case JAL_RAIL_CORE:
        return "core";
    case JAL_RAIL_SRAM:
        return "sram";
    case JAL_RAIL_HBM:
        return "hbm";
    case JAL_RAIL_IO:
        return "io";
    }
    return "unknown";
}

json status_json(const jal::DeviceStatus& s)
{
    json j;
    j["state"] = jal::state_name(s.state);
    j["degraded"] = s.degraded;
    j["status_bits"] = hex(s.raw);
    j["fault"] =
        s.state == jal::DeviceState::failed ? json(jal_status_name(s.fault)) : json(nullptr);
    j["boot_step"] = s.boot_step;
    j["boot_step_status"] = jal_status_name(s.boot_step_status);
    j["post_code"] = hex(s.post_code, 4);
    j["post_step"] = jal_post_step_name(s.post_code);
    j["firmware_version"] = jal::format_fw_version(s.fw_version);
    j["interface_version"] =
        std::to_string(s.if_version >> 16) + "." + std::to_string(s.if_version & 0xffff);
    return j;
}

json identify_json(const jal_identify& id)
{
    json j;
    j["model"] = device_string(id.model);
    j["serial"] = device_string(id.serial);
    j["firmware_version"] = jal::format_fw_version(id.fw_version);
    j["firmware_build"] = device_string(id.fw_build);
    j["interface_version"] =
        std::to_string(id.if_version >> 16) + "." + std::to_string(id.if_version & 0xffff);
    j["chip_index"] = id.chip_index;
    j["boot_count"] = id.boot_count;
    j["slices_total"] = id.slices_total;
    j["slices_enabled"] = id.slices_enabled;
    j["slices_enabled_mask"] = hex(id.slices_enabled_mask, 16);
    j["hbm_stacks"] = id.hbm_stacks;
    j["hbm_channels_total"] = id.hbm_channels_total;
    j["hbm_channels_ok"] = id.hbm_channels_ok;
    j["hbm_bytes_total"] = id.hbm_bytes_total;
    j["hbm_bytes"] = id.hbm_bytes_usable;
    j["power_limit_w"] = milli(id.power_limit_mw);
    j["power_limit_min_w"] = milli(id.power_limit_min_mw);
    j["power_limit_max_w"] = milli(id.power_limit_max_mw);
    j["tdp_w"] = milli(id.tdp_mw);
    j["clock_min_mhz"] = id.clock_min_mhz;
    j["clock_max_mhz"] = id.clock_max_mhz;
    j["temp_limit_c"] = milli(id.temp_limit_mc);
    return j;
}

json telemetry_json(const jal_telemetry& t)
{
    json j;
    j["seq"] = t.seq;
    j["timestamp_us"] = t.timestamp_us;
    j["power_w"] = milli(t.power_mw);
    j["power_avg_w"] = milli(t.power_avg_mw);
    j["power_limit_w"] = milli(t.power_limit_mw);
    j["current_limit_a"] = milli(t.current_limit_ma);
    json rails = json::object();
    for (uint32_t r = 0; r < JAL_RAIL_COUNT; r++)
        rails[rail_name(r)] = {{"current_a", milli(t.rail_current_ma[r])},
                               {"voltage_v", milli(t.rail_voltage_mv[r])}};
    j["rails"] = rails;
    j["temp_c"] = milli(t.temp_junction_mc);
    j["temp_hbm_c"] = milli(t.temp_hbm_mc);
    j["temp_ambient_c"] = milli(t.temp_ambient_mc);
    j["temp_limit_c"] = milli(t.temp_limit_mc);
    j["clock_mhz"] = t.clock_mhz;
    j["clock_target_mhz"] = t.clock_target_mhz;
    j["clock_max_mhz"] = t.clock_max_mhz;
    j["clock_min_mhz"] = t.clock_min_mhz;
    j["voltage_v"] = milli(t.voltage_mv);
    j["limiter"] = jal_limiter_name(t.limiter);
    j["slices_powered"] = t.slices_powered;
    j["slices_busy"] = t.slices_busy;
    j["utilisation_percent"] = t.utilisation_pm / 10.0;
    json residency = json::object();
    for (uint32_t l = 0; l < JAL_LIMITER_COUNT; l++)
        residency[jal_limiter_name(l)] = t.limiter_residency_ms[l] / 1000.0;
    j["limiter_residency_s"] = residency;
    j["energy_j"] = t.energy_uj / 1e6;
    j["uptime_s"] = t.uptime_us / 1e6;
    j["throttle_events"] = t.throttle_events;
    j["emergency_events"] = t.emergency_events;
    j["admin_commands"] = t.admin_commands;
    j["watchdog_resets"] = t.watchdog_resets;
    j["ecc_corrected"] = t.ecc_corrected;
    j["ecc_uncorrected"] = t.ecc_uncorrected;
    j["retired_pages"] = t.retired_pages;
    j["links_connected"] = t.links_connected;
    j["links_up"] = t.links_up;
    j["link_errors"] = t.link_errors;
    j["links_degraded"] = t.links_degraded;
    j["link_retrains"] = t.link_retrains;
    return j;
}

json slice_map_json(const jal_slice_map& map)
{
    json j;
    j["num_slices"] = map.num_slices;
    j["num_enabled"] = map.num_enabled;
    j["fused_mask"] = hex(map.fused_mask, 16);
    j["failed_mask"] = hex(map.failed_mask, 16);
    j["enabled_mask"] = hex(map.enabled_mask, 16);
    json slices = json::array();
    for (uint32_t s = 0; s < std::min<uint32_t>(map.num_slices, JAL_NUM_SLICES); s++) {
        const jal_slice_info& info = map.slices[s];
        slices.push_back(
            {{"physical_id", s},
             {"logical_id", info.logical_id == 0xff ? json(nullptr) : json(info.logical_id)},
             {"state", slice_state_name(info.state)},
             {"channels_ok", info.channels_ok},
             {"power_gated", info.power_gated != 0},
             {"bist_us", info.bist_us}});
    }
    j["slices"] = slices;
    return j;
}

json hbm_channel_json(uint32_t channel, const jal_hbm_channel_report& r)
{
    int min_read = -1, min_write = -1;
    for (const auto& lane : r.lanes) {
        if (!(lane.flags & JAL_HBM_LANE_IN_USE)) continue;
        min_read = min_read < 0 ? lane.read_margin : std::min<int>(min_read, lane.read_margin);
        min_write = min_write < 0 ? lane.write_margin : std::min<int>(min_write, lane.write_margin);
    }
    json repairs = json::array();
    for (uint32_t k = 0; k < JAL_HBM_SPARE_LANES; k++)
        if (r.repair[k] != 0xff) repairs.push_back({{"spare", k}, {"dq_lane", r.repair[k]}});
    return {{"channel", channel},
            {"stack", r.stack},
            {"slice", jal_slice_of_channel(channel)},
            {"status", hbm_channel_status_name(r.status)},
            {"vref", r.vref},
            {"dead_lanes", r.dead_lanes},
            {"repairs", repairs},
            {"memtest_errors", r.memtest_errors},
            {"ecc_corrected", r.ecc_corrected},
            {"ecc_uncorrected", r.ecc_uncorrected},
            {"retired_pages", r.retired_pages},
            {"training_us", r.training_us},
            {"min_read_margin", min_read < 0 ? json(nullptr) : json(min_read)},
            {"min_write_margin", min_write < 0 ? json(nullptr) : json(min_write)}};
}

json hbm_lane_json(uint32_t lane, const jal_hbm_lane_report& l)
{
    return {{"lane", lane},
            {"spare", (l.flags & JAL_HBM_LANE_SPARE) != 0},
            {"in_use", (l.flags & JAL_HBM_LANE_IN_USE) != 0},
            {"dead", (l.flags & JAL_HBM_LANE_DEAD) != 0},
            {"no_eye", (l.flags & JAL_HBM_LANE_NOEYE) != 0},
            {"read_delay", l.read_delay},
            {"read_width", l.read_width},
            {"read_margin", l.read_margin},
            {"write_delay", l.write_delay},
            {"write_width", l.write_width},
            {"write_margin", l.write_margin}};
}

json event_json(const jal_log_event& e)
{
    return {{"seq", e.seq},
            {"timestamp_us", e.timestamp_us},
            {"severity", severity_name(e.severity)},
            {"source", source_name(e.source)},
            {"code", e.code},
            {"name", event_name(e)},
            {"args", {e.args[0], e.args[1], e.args[2], e.args[3]}},
            {"fields", event_fields(e)},
            {"text", device_string(e.text)}};
}

json memory_json(const jal_usage& u)
{
    const uint64_t total = uint64_t{u.pages_total} * u.page_size;
    const uint64_t free = uint64_t{u.pages_free} * u.page_size;
    const double percent =
        total ? std::round(1000.0 * double(total - free) / double(total)) / 10 : 0;
    return {{"total_bytes", total},
            {"used_bytes", total - free},
            {"free_bytes", free},
            {"used_percent", percent}};
}

std::string bytes_text(uint64_t bytes)
{
    constexpr uint64_t kMiB = 1ull << 20, kGiB = 1ull << 30;
    char buf[32];
    if (bytes >= kGiB)
        std::snprintf(buf, sizeof buf, "%.3f GiB", double(bytes) / double(kGiB));
    else if (bytes >= kMiB)
        std::snprintf(buf, sizeof buf, "%llu MiB", static_cast<unsigned long long>(bytes / kMiB));
    else
        std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
    return buf;
}

json post_entry_json(const jal_post_entry& p)
{
    return {{"step", p.step},
            {"post_code", hex(p.post_code, 4)},
            {"name", jal_post_step_name(p.post_code)},
            {"timestamp_us", p.timestamp_us},
            {"status", jal_status_name(p.status)}};
}

const char* link_state_name(uint8_t state)
{
    switch (state) {
    case JAL_LINK_PORT_NOT_CABLED:
        return "not_cabled";
    case JAL_LINK_PORT_DOWN:
        return "down";
    case JAL_LINK_PORT_UP:
        return "up";
    case JAL_LINK_PORT_DEGRADED:
        return "degraded";
    }
    return "unknown";
}

json link_port_json(const jal_link_port_report& p)
{
    const bool switched = p.flags & JAL_LINK_PORT_SWITCHED;
    json margins = json::array();
    for (uint16_t m : p.margin_mui) margins.push_back(m);
    return {{"port", p.port},
            {"kind", p.kind == JAL_LINK_KIND_SCALE_OUT ? "scale-out" : "scale-up"},
            {"state", link_state_name(p.state)},
            {"reason", jal_link_down_reason_name(p.reason)},
            {"lanes", p.lanes},
            {"lanes_ok", hex(p.lanes_ok_mask)},
            // A switched port reaches any chip on its plane: no one peer.
            {"peer_chip", switched ? json() : json(p.peer_chip)},
            {"peer_port", switched ? json() : json(p.peer_port)},
            {"switch_plane", switched ? json(p.peer_port) : json()},
            {"gbytes_per_s", p.mbytes_per_s / 1000.0},
            {"margins_mui", margins},
            {"trainings", p.trainings},
            {"retrains", p.retrains},
            {"errors", p.errors},
            {"tx_bytes", p.tx_bytes},
            {"rx_bytes", p.rx_bytes},
            {"transfers", p.transfers}};
}

}  // namespace jal::ctl
