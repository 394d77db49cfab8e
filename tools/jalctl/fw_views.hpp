// `jalctl fw`: the boot ROM's view of the firmware (slots, versions, fuses), as text and
// JSON; shared by `fw status` and `fw update`'s report.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include <jal/hw/fw_image.h>

namespace jal::ctl {

nlohmann::json fw_status_json(const jal_fw_status& st);
void print_fw_status(std::ostream& out, unsigned device, const jal_fw_status& st);
char slot_letter(uint32_t slot);

}  // namespace jal::ctl
