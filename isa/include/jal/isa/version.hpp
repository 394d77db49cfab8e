// The ISA version this build implements (include/jal/hw/isa.h), as a string for tools.
#pragma once

namespace jal::isa {
const char* version_string();
}  // namespace jal::isa
