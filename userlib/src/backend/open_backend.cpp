#include "open_backend.hpp"

#include "direct/direct_backend.hpp"

namespace jal::backend {

std::unique_ptr<Backend> open_backend(unsigned index, const OpenOptions &options)
{
	std::string dir = options.emu_dir.empty() ? default_emu_dir() : options.emu_dir;
	direct::DirectOptions direct_options;
	direct_options.reply_timeout = options.reply_timeout;
	direct_options.client_name = options.client_name;
	return std::make_unique<direct::DirectBackend>(emu_socket_path(dir, index), direct_options);
}

} // namespace jal::backend
