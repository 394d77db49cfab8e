// Which host pointer backs a bus address: the admin shim reads the rings and fills the
// data buffers that userlib names by bus address, as the device would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>

namespace jal::kmd {

class BusRegistry {
public:
    void add(uint64_t bus, std::byte* ptr, size_t size)
    {
        std::lock_guard lock(mutex_);
        regions_[bus] = {ptr, size};
    }
    void remove(uint64_t bus)
    {
        std::lock_guard lock(mutex_);
        regions_.erase(bus);
    }
    // The host pointer of [bus, bus + len), or nullptr unless one region holds it all.
    std::byte* find(uint64_t bus, size_t len) const
    {
        std::lock_guard lock(mutex_);
        auto it = regions_.upper_bound(bus);
        if (it == regions_.begin()) return nullptr;
        --it;
        uint64_t off = bus - it->first;
        if (off > it->second.size || len > it->second.size - off) return nullptr;
        return it->second.ptr + off;
    }

private:
    struct Region {
        std::byte* ptr;
        size_t size;
    };
    mutable std::mutex mutex_;
    std::map<uint64_t, Region> regions_;
};

}  // namespace jal::kmd
