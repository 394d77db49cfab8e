#include "tools/common/version.hpp"

#include <jal/hw/version.h>

#ifndef JAL_PROJECT_VERSION
#error "JAL_PROJECT_VERSION is set by tools/common/CMakeLists.txt from project(VERSION)"
#endif

namespace jal::tools {

std::string version_text(std::string_view program, const std::vector<std::string>& extra)
{
    std::string text = std::string(program) + " " + JAL_PROJECT_VERSION + " (" + JAL_PROJECT_NAME +
                       ")\n" + "device interface " + std::to_string(JAL_HW_VERSION_MAJOR) + "." +
                       std::to_string(JAL_HW_VERSION_MINOR);
    for (const auto& line : extra) text += "\n" + line;
    return text;
}

}  // namespace jal::tools
