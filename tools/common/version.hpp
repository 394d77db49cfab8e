// What every installed program prints for --version: its name, the project's version and the
// device-interface version it was built against (plus lines of its own, e.g. jal-emu's ISA):
//
//   jal-emu 0.1.0 (jalapeno)
//   device interface 1.4
//   tile ISA 1.2
//
// Used by the emulator as well as the host tools, so it depends on nothing but the device
// interface headers (no libjal: scripts/check-layering.sh).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace jal::tools {

// The --version text, one line per item, without a final newline (CLI11 adds one). The
// project's version is CMake's project(VERSION), a compile definition of version.cpp.
std::string version_text(std::string_view program, const std::vector<std::string>& extra = {});

}  // namespace jal::tools
