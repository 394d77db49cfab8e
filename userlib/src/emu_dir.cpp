#include <jal/emu_dir.hpp>

#include <cstdlib>
#include <unistd.h>

namespace jal {

namespace {
const char* nonempty_env(const char* name)
{
    const char* value = std::getenv(name);
    return value && *value ? value : nullptr;
}
}  // namespace

std::string default_emu_dir()
{
    if (const char* dir = nonempty_env("JAL_EMU_DIR")) return dir;
    if (const char* runtime = nonempty_env("XDG_RUNTIME_DIR"))
        return std::string(runtime) + "/jal-emu";
    return "/tmp/jal-emu-" + std::to_string(::getuid());
}

std::string emu_socket_path(const std::string& dir, unsigned index)
{
    return dir + "/jal" + std::to_string(index) + ".sock";
}

}  // namespace jal
