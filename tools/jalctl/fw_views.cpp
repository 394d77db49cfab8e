#include "fw_views.hpp"

#include <fmt/format.h>

#include "fwimage/image.hpp"
#include "json_views.hpp"
#include "table.hpp"

namespace jal::ctl {

namespace {

const char* slot_state_name(uint32_t state)
{
    switch (state) {
    case JAL_FW_SLOT_EMPTY:
        return "empty";
    case JAL_FW_SLOT_VALID:
        return "valid";
    case JAL_FW_SLOT_INVALID:
        return "invalid";
    default:
        return "unknown";
    }
}

std::string key_id_text(const jal_fw_status& st)
{
    std::string out;
    for (uint8_t b : st.key_id) out += fmt::format("{:02x}", b);
    return out;
}

}  // namespace

char slot_letter(uint32_t slot)
{
    return slot < JAL_FW_SLOTS ? static_cast<char>('A' + slot) : '?';
}

json fw_status_json(const jal_fw_status& st)
{
    json slots = json::array();
    for (uint32_t i = 0; i < JAL_FW_SLOTS; ++i) {
        const jal_fw_slot_info& s = st.slots[i];
        json j = {{"slot", std::string(1, slot_letter(i))},
                  {"state", slot_state_name(s.state)},
                  {"running", i == st.running_slot}};
        if (s.state != JAL_FW_SLOT_EMPTY) {
            j["version"] = jal::fwimage::version_text(s.fw_version);
            j["rollback"] = s.rollback;
            j["body_bytes"] = s.body_len;
            j["build"] = device_string(s.build);
        }
        j["reject_reason"] = s.state == JAL_FW_SLOT_INVALID
                                 ? json(jal_fw_image_error_name(s.reject_reason))
                                 : json(nullptr);
        slots.push_back(j);
    }
    const bool failed = st.failed_slot < JAL_FW_SLOTS;
    return {{"running_slot", std::string(1, slot_letter(st.running_slot))},
            {"running_version",
             jal::fwimage::version_text(st.slots[st.running_slot % JAL_FW_SLOTS].fw_version)},
            {"trial", (st.flags & JAL_FW_STATUS_TRIAL) != 0},
            {"fell_back", (st.flags & JAL_FW_STATUS_FELL_BACK) != 0},
            {"update_ready", (st.flags & JAL_FW_STATUS_UPDATE_READY) != 0},
            {"failed_slot", failed ? json(std::string(1, slot_letter(st.failed_slot))) : json()},
            {"rollback_fuses", st.rollback_fuses},
            {"staged_bytes", st.staged_bytes},
            {"key_id", key_id_text(st)},
            {"slots", slots}};
}

void print_fw_status(std::ostream& out, unsigned device, const jal_fw_status& st)
{
    const jal_fw_slot_info& run = st.slots[st.running_slot % JAL_FW_SLOTS];
    out << fmt::format(
        "device {}: running slot {} (version {}{}), rollback fuses {}, key {}\n", device,
        slot_letter(st.running_slot), jal::fwimage::version_text(run.fw_version),
        st.flags & JAL_FW_STATUS_TRIAL ? ", on trial" : "", st.rollback_fuses, key_id_text(st));
    if (st.flags & JAL_FW_STATUS_FELL_BACK)
        out << fmt::format("the image in slot {} failed its first boot; fell back to slot {}\n",
                           slot_letter(st.failed_slot), slot_letter(st.running_slot));
    Table t({{"SLOT"},
             {"STATE"},
             {"VERSION"},
             {"ROLLBACK", Table::Align::right},
             {"BYTES", Table::Align::right},
             {"BUILD"},
             {"NOTE"}});
    for (uint32_t i = 0; i < JAL_FW_SLOTS; ++i) {
        const jal_fw_slot_info& s = st.slots[i];
        const bool empty = s.state == JAL_FW_SLOT_EMPTY;
        std::string note = i == st.running_slot ? "running" : "";
        if (s.state == JAL_FW_SLOT_INVALID) note = jal_fw_image_error_name(s.reject_reason);
        t.add_row({std::string(1, slot_letter(i)), slot_state_name(s.state),
                   empty ? "-" : jal::fwimage::version_text(s.fw_version),
                   empty ? "-" : std::to_string(s.rollback),
                   empty ? "-" : std::to_string(s.body_len), empty ? "-" : device_string(s.build),
                   note});
    }
    t.print(out);
}

}  // namespace jal::ctl
