// Backend over the jal-emu transport: one socket connection is one host function.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "../backend.hpp"
#include "direct_connection.hpp"

namespace jal::direct {

struct DirectOptions {
    std::chrono::milliseconds reply_timeout{5000};
    std::string client_name = "libjal";
};

class DirectBackend final : public backend::Backend {
public:
    // Connects to `socket_path` and says HELLO. Throws jal::Error (NO_DEVICE when no
    // emulator listens there, VERSION_MISMATCH, TIMEOUT, IO_ERROR).
    DirectBackend(const std::string& socket_path, const DirectOptions& options);

    uint32_t read32(uint32_t bar, uint32_t offset) override;
    void write32(uint32_t bar, uint32_t offset, uint32_t value) override;
    void write64(uint32_t bar, uint32_t offset, uint64_t value) override;
    std::unique_ptr<backend::HostMemory> share_host_memory(size_t bytes) override;
    void bind_irq(uint32_t vector, int eventfd) override;
    std::shared_ptr<backend::DoorbellMapping> map_doorbells() override;
    const backend::BackendIdentity& identity() const override { return identity_; }
    std::vector<OtherClient> other_clients() override;

private:
    uint64_t reserve_bus_range(size_t bytes);

    std::shared_ptr<DirectConnection> connection_;
    backend::BackendIdentity identity_;
    std::mutex bus_mutex_;
    uint64_t next_bus_addr_;
};

}  // namespace jal::direct
