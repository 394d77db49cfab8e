// Host memory for the direct transport: a memfd mapped MAP_SHARED here and handed to the
// emulator with MEM_MAP, so both processes see the same pages.
#pragma once

#include <memory>

#include "../../util/unique_fd.hpp"
#include "../backend.hpp"
#include "direct_connection.hpp"

namespace jal::direct {

class MemfdMemory final : public backend::HostMemory {
public:
    // `size` is a page multiple, `bus_addr` page aligned and not in use.
    MemfdMemory(std::shared_ptr<DirectConnection> connection, size_t size, uint64_t bus_addr);
    ~MemfdMemory() override;

    std::byte* data() override { return data_; }
    size_t size() const override { return size_; }
    uint64_t bus_addr() const override { return bus_addr_; }

private:
    std::shared_ptr<DirectConnection> connection_;
    util::UniqueFd memfd_;
    std::byte* data_ = nullptr;
    size_t size_;
    uint64_t bus_addr_;
};

}  // namespace jal::direct
