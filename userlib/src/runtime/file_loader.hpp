// Loading a file into device memory: io_uring reads (O_DIRECT where the filesystem allows
// it) into pinned bounce buffers, several in flight, each then copied host-to-device by a
// user queue while the next reads proceed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "runtime_objects.hpp"

namespace jal::runtime::detail {

struct LoadOptions {
    bool try_direct = true;
    size_t chunk_bytes = 4u << 20;
    unsigned depth = 4;  // bounce buffers, i.e. reads or copies in flight
    // Called after each chunk lands on the device; return false to cancel (ABORTED).
    std::function<bool(uint64_t done, uint64_t total)> progress;
};

struct LoadResult {
    uint64_t bytes = 0;
    bool direct = false;  // read with O_DIRECT
};

LoadResult load_file(UserQueue& queue, const std::string& path, uint64_t dst_va, uint64_t capacity,
                     const LoadOptions& options);

}  // namespace jal::runtime::detail
