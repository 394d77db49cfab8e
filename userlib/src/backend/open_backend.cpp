#include "open_backend.hpp"

#include <sys/stat.h>

#include "direct/direct_backend.hpp"
#include "kmd/kmd_backend.hpp"

namespace jal::backend {

std::unique_ptr<Backend> open_backend(unsigned index, const OpenOptions& options)
{
    // A chip on this machine's PCI bus, driven by jal.ko, wins over an emulator socket.
    std::string node = kmd::device_node(index);
    struct stat st;
    if (::stat(node.c_str(), &st) == 0 && S_ISCHR(st.st_mode))
        return std::make_unique<kmd::KmdBackend>(node);

    std::string dir = options.emu_dir.empty() ? default_emu_dir() : options.emu_dir;
    direct::DirectOptions direct_options;
    direct_options.reply_timeout = options.reply_timeout;
    direct_options.client_name = options.client_name;
    return std::make_unique<direct::DirectBackend>(emu_socket_path(dir, index), direct_options);
}

}  // namespace jal::backend
