#include <jal/device_types.hpp>

namespace jal {

const char* state_name(DeviceState state)
{
    switch (state) {
    case DeviceState::booting:
        return "booting";
    case DeviceState::ready:
        return "ready";
    case DeviceState::failed:
        return "failed";
    case DeviceState::resetting:
        return "resetting";
    case DeviceState::unknown:
        break;
    }
    return "unknown";
}

std::string format_fw_version(uint32_t v)
{
    return std::to_string(v >> 16) + "." + std::to_string((v >> 8) & 0xff) + "." +
           std::to_string(v & 0xff);
}

}  // namespace jal
