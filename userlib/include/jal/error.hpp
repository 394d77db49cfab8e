// The one exception type of libjal: a jal_status (the stable code shared with the device)
// and a message that names the device and what failed.
#pragma once

#include <stdexcept>
#include <string>

#include <jal/api.h>
#include <jal/hw/status.h>

namespace jal {

class JAL_API Error : public std::runtime_error {
public:
    Error(jal_status status, const std::string& message);

    jal_status status() const noexcept { return status_; }
    const char* status_name() const noexcept { return jal_status_name(status_); }
    // The device was reset under this handle (JAL_STATUS_DEVICE_RESET): release every
    // handle of the device, close it and open it again (docs/userlib.md, "Device reset").
    bool device_reset() const noexcept { return status_ == JAL_STATUS_DEVICE_RESET; }

private:
    jal_status status_;
};

}  // namespace jal
