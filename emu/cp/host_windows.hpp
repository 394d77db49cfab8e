// The command processor's host-window table (device interface 1.11, admin.h jal_window_op):
// which bus ranges a queue whose context has a host space may name. A kernel driver serves
// every process through one function, so one bus address space; it gives each open file a
// space and a window per buffer, and the engines refuse any other host address of that
// file's queues with DMA_FAULT, as they refuse an unmapped one.
#pragma once

#include <cstdint>
#include <map>
#include <shared_mutex>
#include <utility>
#include <vector>

namespace jal::emu {

class HostWindows {
public:
    // The jal_status of each command (OK, INVALID_FIELD, BUSY).
    std::uint32_t add(std::uint32_t fn, std::uint32_t space, std::uint64_t base,
                      std::uint64_t size);
    std::uint32_t remove(std::uint32_t fn, std::uint32_t space, std::uint64_t base,
                         std::uint64_t size);
    void clear_space(std::uint32_t fn, std::uint32_t space);
    void clear_function(std::uint32_t fn);
    void clear();

    // Whether [addr, addr + len) lies inside one window of (fn, space). Space 0 is no
    // restriction: the function's whole bus address space.
    bool allows(std::uint32_t fn, std::uint32_t space, std::uint64_t addr, std::uint64_t len) const;
    std::uint32_t count() const;

private:
    struct Window {
        std::uint64_t base, size;
    };
    using Key = std::pair<std::uint32_t, std::uint32_t>;  // function, space
    mutable std::shared_mutex m_;
    std::map<Key, std::vector<Window>> spaces_;
    std::uint32_t count_ = 0;
};

}  // namespace jal::emu
