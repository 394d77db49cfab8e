// FW_DOWNLOAD, FW_ACTIVATE and FW_STATUS: the admin side of a firmware update. The boot
// ROM's firmware-update unit (jal/hw/fw_image.h) owns the slots and does the verifying; the
// firmware checks the command's fields, hands it over and reports the outcome. It never
// writes a slot or judges an image itself, so a compromised firmware cannot install an
// image the boot ROM would refuse.
#pragma once

#include <cstdint>

#include "firmware/host/admin_commands.hpp"
#include "jal/hw/admin.h"

namespace jal::fw::host {

bool is_firmware_command(std::uint8_t opcode);
std::uint32_t firmware_min_data_len(std::uint8_t opcode);
Completion firmware_command(std::uint32_t fn, const jal_admin_sqe& sqe);

// Boot step "ready": tells the boot ROM this image booted, ending a trial.
void confirm_boot();

}  // namespace jal::fw::host
