// Backend over the kernel driver: /dev/jalN (jal.ko). Registers the device layer reads
// come from the driver (INFO); the admin queue is the in-process KmdAdminShim; host memory
// is the driver's DMA memory; interrupts are eventfds the driver signals; doorbells are
// the queue's BAR2 page mapped by the driver.
#pragma once

#include <memory>
#include <string>

#include "../backend.hpp"
#include "bus_registry.hpp"
#include "kmd_admin_shim.hpp"
#include "kmd_doorbells.hpp"
#include "kmd_file.hpp"

namespace jal::kmd {

// "/dev/jal<index>"
std::string device_node(unsigned index);

class KmdBackend final : public backend::Backend {
public:
    // Opens the node. Throws jal::Error (NO_DEVICE when it cannot be opened).
    explicit KmdBackend(const std::string& path);

    uint32_t read32(uint32_t bar, uint32_t offset) override;
    void write32(uint32_t bar, uint32_t offset, uint32_t value) override;
    void write64(uint32_t bar, uint32_t offset, uint64_t value) override;
    std::unique_ptr<backend::HostMemory> share_host_memory(size_t bytes) override;
    void bind_irq(uint32_t vector, int eventfd) override;
    std::shared_ptr<backend::DoorbellMapping> map_doorbells() override;
    const backend::BackendIdentity& identity() const override { return identity_; }
    std::vector<OtherClient> other_clients() override;

private:
    std::shared_ptr<const KmdFile> file_;
    std::shared_ptr<BusRegistry> registry_;
    KmdAdminShim admin_;
    backend::BackendIdentity identity_;
};

}  // namespace jal::kmd
