// Value types returned by jal::ChipFunction. Fixed-layout device data is returned as the
// structures of the device interface (jal/hw/*.h) rather than restated here.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <jal/api.h>
#include <jal/hw/admin.h>
#include <jal/hw/fw_image.h>
#include <jal/hw/status.h>
#include <jal/hw/telemetry.h>

namespace jal {

enum class DeviceState {
    booting,    // firmware is running its boot table
    ready,      // booted; the admin queue can be used
    failed,     // boot failed or a fatal error; see DeviceStatus::fault
    resetting,  // a reset was requested and has not started booting yet
    unknown,    // no state bit set (should not happen)
};

// "booting", "ready", "failed", "resetting", "unknown".
JAL_API const char* state_name(DeviceState state);

// The boot and health registers, read without the admin queue (works while booting).
struct DeviceStatus {
    uint32_t raw = 0;  // JAL_REG_STATUS
    DeviceState state = DeviceState::unknown;
    bool degraded = false;             // ready with harvested slices or failed channels
    jal_status fault = JAL_STATUS_OK;  // JAL_REG_FAULT, meaningful when failed
    uint32_t boot_step = 0;            // last finished step of the boot table
    jal_status boot_step_status = JAL_STATUS_OK;
    uint32_t post_code = 0;
    uint32_t fw_version = 0;        // major << 16 | minor << 8 | patch
    uint32_t if_version = 0;        // JAL_REG_VERSION
    uint32_t reset_generation = 0;  // JAL_REG_RESET_GENERATION: resets since power-on
};

// Another client attached to the same chip (what `jalctl reset` lists before it takes
// their contexts away).
struct AttachedClient {
    uint32_t function = 0;    // the host function it is attached as
    uint32_t pid = 0;         // 0: not known
    std::string process;      // its /proc/<pid>/comm, empty if not known
    std::string client_name;  // the name it gave when it opened the device
    uint32_t contexts = 0;    // contexts it holds on the chip
};

// "1.2.3" from major << 16 | minor << 8 | patch.
JAL_API std::string format_fw_version(uint32_t fw_version);

struct DeviceEntry {
    unsigned index = 0;
    std::string socket_path;
};

struct HbmReport {
    jal_hbm_report_header header{};
    std::vector<jal_hbm_channel_report> channels;  // header.first_channel onwards
};

struct LinkReport {
    jal_link_report_header header{};
    std::vector<jal_link_port_report> ports;  // header.first_port onwards
};

struct EventLog {
    std::vector<jal_log_event> events;  // oldest first
    uint32_t next_seq = 0;              // pass as first_seq to read only newer events
    uint32_t lost = 0;                  // overwritten before they could be read
};

struct PostTrail {
    std::vector<jal_post_entry> entries;  // the last boot, in order
    uint32_t lost = 0;
};

enum class ResetMethod {
    reset_register,  // write JAL_RESET_MAGIC to JAL_REG_RESET
    admin_command,   // JAL_ADMIN_RESET (completes, then resets)
    // JAL_ADMIN_FW_ACTIVATE: the boot ROM verifies the downloaded image and the chip resets
    // into it on trial; throws IMAGE_REJECTED (nothing reset) when the image is refused
    firmware_update,
};

struct ResetProgress {
    DeviceStatus status;
    std::chrono::milliseconds elapsed{0};
};

struct ResetOutcome {
    bool reset_observed = false;  // the device was seen leaving READY (or its boot count grew)
    bool came_back = false;       // ...and then reached READY within the timeout
    DeviceStatus status;          // the last status read
    std::chrono::milliseconds elapsed{0};
};

// One admin completion as the device reported it.
struct AdminCompletion {
    uint16_t cid = 0;
    jal_status status = JAL_STATUS_OK;
    uint32_t result = 0;
};

struct RawAdminResult {
    AdminCompletion completion;
    std::vector<std::byte> data;  // the command's data buffer after completion
};

}  // namespace jal
