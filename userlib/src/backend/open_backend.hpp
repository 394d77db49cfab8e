// The one place that decides which backend drives a device.
#pragma once

#include <memory>

#include <jal/device.hpp>

#include "backend.hpp"

namespace jal::backend {

// Today always the direct emulator transport at emu_socket_path(dir, index); the kernel
// driver backend will be chosen here when /dev/jal<index> exists.
std::unique_ptr<Backend> open_backend(unsigned index, const OpenOptions &options);

} // namespace jal::backend
