// The firmware log: text written byte by byte to JAL_SYS_CONSOLE; the emulator prints
// each '\n'-terminated line.
#pragma once

#include "firmware/hal/hal.hpp"
#include "jal/hw/mgmt.h"

namespace jal::fw::sys {

inline void console_line(const char* text)
{
    for (const char* p = text; *p; ++p)
        hal::write32(JAL_SYS_CONSOLE, static_cast<unsigned char>(*p));
    hal::write32(JAL_SYS_CONSOLE, '\n');
}

}  // namespace jal::fw::sys
