#include "firmware/host/admin_firmware.hpp"

#include "firmware/hal/hal.hpp"
#include "jal/hw/fw_image.h"
#include "jal/hw/status.h"

namespace jal::fw::host {

namespace {

std::uint32_t fwu_command(std::uint32_t fn, const jal_admin_sqe& sqe, std::uint32_t offset,
                          std::uint32_t cmd)
{
    hal::write32(JAL_FWU_FN, fn);
    hal::write32(JAL_FWU_HOST_LO, static_cast<std::uint32_t>(sqe.data_addr));
    hal::write32(JAL_FWU_HOST_HI, static_cast<std::uint32_t>(sqe.data_addr >> 32));
    hal::write32(JAL_FWU_LEN, sqe.data_len);
    hal::write32(JAL_FWU_OFFSET, offset);
    hal::write32(JAL_FWU_CMD, cmd);
    return hal::read32(JAL_FWU_STATUS);
}

Completion done(std::uint32_t status, std::uint32_t result = 0,
                AfterAction after = AfterAction::kNone)
{
    return Completion{status == JAL_STATUS_OK ? result : 0, status,
                      status == JAL_STATUS_OK ? after : AfterAction::kNone};
}

}  // namespace

bool is_firmware_command(std::uint8_t opcode)
{
    return opcode == JAL_ADMIN_FW_DOWNLOAD || opcode == JAL_ADMIN_FW_ACTIVATE ||
           opcode == JAL_ADMIN_FW_STATUS;
}

std::uint32_t firmware_min_data_len(std::uint8_t opcode)
{
    if (opcode == JAL_ADMIN_FW_DOWNLOAD) return 1;
    if (opcode == JAL_ADMIN_FW_STATUS) return sizeof(jal_fw_status);
    return 0;
}

Completion firmware_command(std::uint32_t fn, const jal_admin_sqe& sqe)
{
    switch (sqe.opcode) {
    case JAL_ADMIN_FW_DOWNLOAD: {
        if (sqe.cdw[0] > JAL_FW_SLOT_BYTES) return done(JAL_STATUS_OUT_OF_RANGE);
        const std::uint32_t st = fwu_command(fn, sqe, sqe.cdw[0], JAL_FWU_CMD_WRITE);
        return done(st, hal::read32(JAL_FWU_DETAIL));  // bytes in the slot so far
    }
    case JAL_ADMIN_FW_ACTIVATE: {
        if (sqe.data_len != 0) return done(JAL_STATUS_INVALID_LENGTH);
        const std::uint32_t st = fwu_command(fn, sqe, 0, JAL_FWU_CMD_ACTIVATE);
        // A rejection says why in the result (jal_fw_image_error); the old image runs on.
        if (st == JAL_STATUS_IMAGE_REJECTED)
            return Completion{hal::read32(JAL_FWU_DETAIL), st, AfterAction::kNone};
        return done(st, 0, AfterAction::kResetChip);
    }
    case JAL_ADMIN_FW_STATUS: {
        const std::uint32_t st = fwu_command(fn, sqe, 0, JAL_FWU_CMD_STATUS);
        return done(st, sizeof(jal_fw_status));
    }
    default:
        return done(JAL_STATUS_INVALID_OPCODE);
    }
}

void confirm_boot()
{
    hal::write32(JAL_FWU_CMD, JAL_FWU_CMD_CONFIRM);
}

}  // namespace jal::fw::host
