// Where jal-emu puts its sockets. Shared by the emulator (which creates them) and the
// direct backend (which connects to them) so both sides follow the same rule.
#pragma once

#include <string>

namespace jal {

// $JAL_EMU_DIR if set and non-empty; else $XDG_RUNTIME_DIR/jal-emu if XDG_RUNTIME_DIR is
// set and non-empty; else /tmp/jal-emu-<uid>.
std::string default_emu_dir();

// DIR/jal<index>.sock: the socket of chip `index` served by the emulator in DIR.
std::string emu_socket_path(const std::string& dir, unsigned index);

}  // namespace jal
