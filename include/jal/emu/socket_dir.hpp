// Where jal-emu puts its sockets: part of the transport interface (protocol.h), shared by
// the emulator (which creates the sockets) and its clients (userlib's direct backend, the
// tools) so both sides follow the same rule. Header-only: the emulator links no libjal.
#pragma once

#include <cstdlib>
#include <string>
#include <unistd.h>

namespace jal {

namespace emu_dir_detail {
inline const char* nonempty_env(const char* name)
{
    const char* value = std::getenv(name);
    return value && *value ? value : nullptr;
}
}  // namespace emu_dir_detail

// $JAL_EMU_DIR if set and non-empty; else $XDG_RUNTIME_DIR/jal-emu if XDG_RUNTIME_DIR is
// set and non-empty; else /tmp/jal-emu-<uid>.
inline std::string default_emu_dir()
{
    if (const char* dir = emu_dir_detail::nonempty_env("JAL_EMU_DIR")) return dir;
    if (const char* runtime = emu_dir_detail::nonempty_env("XDG_RUNTIME_DIR"))
        return std::string(runtime) + "/jal-emu";
    return "/tmp/jal-emu-" + std::to_string(::getuid());
}

// DIR/jal<index>: the base name of chip `index`'s sockets in DIR (".sock": the transport,
// ".console": the management console).
inline std::string emu_socket_base(const std::string& dir, unsigned index)
{
    return dir + "/jal" + std::to_string(index);
}

// DIR/jal<index>.sock: the socket of chip `index` served by the emulator in DIR.
inline std::string emu_socket_path(const std::string& dir, unsigned index)
{
    return emu_socket_base(dir, index) + ".sock";
}

}  // namespace jal
