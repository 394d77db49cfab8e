// Where jal-emu puts its sockets (default_emu_dir(), emu_socket_path()). The rule is part
// of the emulator's transport interface and lives with it in <jal/emu/socket_dir.hpp>;
// this header keeps libjal's include working.
#pragma once

#include <jal/emu/socket_dir.hpp>
