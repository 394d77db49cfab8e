// The one place that decides which backend drives a device.
#pragma once

#include <memory>

#include <jal/chip_function.hpp>

#include "backend.hpp"

namespace jal::backend {

// The kernel driver when /dev/jal<index> exists (a chip on this machine's PCI bus, or a
// VM's), else the direct emulator transport at emu_socket_path(dir, index).
std::unique_ptr<Backend> open_backend(unsigned index, const OpenOptions& options);

}  // namespace jal::backend
