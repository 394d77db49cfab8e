// Host memory from the driver: physically contiguous DMA memory (HOST_ALLOC) mapped into
// this process. The bus address is where the device sees it (guest-physical in a VM).
#pragma once

#include <memory>

#include "../backend.hpp"
#include "kmd_file.hpp"

namespace jal::kmd {

class BusRegistry;

class KmdMemory final : public backend::HostMemory {
public:
    KmdMemory(std::shared_ptr<const KmdFile> file, std::shared_ptr<BusRegistry> registry,
              size_t bytes);
    ~KmdMemory() override;

    std::byte* data() override { return data_; }
    size_t size() const override { return size_; }
    uint64_t bus_addr() const override { return bus_addr_; }

private:
    std::shared_ptr<const KmdFile> file_;
    std::shared_ptr<BusRegistry> registry_;
    uint32_t handle_ = 0;
    std::byte* data_ = nullptr;
    size_t size_;
    uint64_t bus_addr_ = 0;
};

}  // namespace jal::kmd
