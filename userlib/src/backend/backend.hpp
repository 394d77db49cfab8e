// The device layer's one view of a chip function: register access, host memory the device
// can DMA into, interrupts as eventfds. Implemented by the direct emulator transport
// (direct/: jal-emu's socket) and by the kernel-driver backend (kmd/: /dev/jalN, jal.ko);
// nothing above this interface may know which it talks to.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace jal::backend {

struct BackendIdentity {
    std::string transport;           // "direct" or "kmd"
    std::string location;            // socket path or device node
    uint32_t interface_version = 0;  // transport protocol version of the other side
    uint32_t function = 0;           // host function this backend drives
    uint32_t chip_index = 0;
    uint32_t msix_vectors = 0;
    std::array<uint64_t, 6> bar_size{};
};

// Host memory shared with the device. The device reaches it at bus_addr(); the host at
// data(). Releasing it withdraws the device's access.
class HostMemory {
public:
    virtual ~HostMemory() = default;
    virtual std::byte* data() = 0;
    virtual size_t size() const = 0;
    virtual uint64_t bus_addr() const = 0;
};

// The function's user-queue doorbells (BAR2), mapped into this process. Queue `id` owns
// the JAL_DOORBELL_STRIDE bytes at page(id): the write index at JAL_DOORBELL_WRITE_INDEX,
// the device's NEED_WAKEUP flag at JAL_DOORBELL_NEED_WAKEUP (queue.h).
class DoorbellMapping {
public:
    virtual ~DoorbellMapping() = default;
    virtual std::byte* page(uint32_t queue_id) = 0;
    // Wakes a queue engine that set NEED_WAKEUP. With the direct transport this is the
    // function's kick eventfd; where the doorbell write itself reaches the device (kernel
    // driver, QEMU) it does nothing.
    virtual void kick() = 0;
};

class Backend {
public:
    virtual ~Backend() = default;

    // 32-bit register access. Writes may be posted: they take effect in order, before any
    // later read through the same backend returns.
    virtual uint32_t read32(uint32_t bar, uint32_t offset) = 0;
    virtual void write32(uint32_t bar, uint32_t offset, uint32_t value) = 0;
    // 64-bit doorbell writes (BAR2).
    virtual void write64(uint32_t bar, uint32_t offset, uint64_t value) = 0;

    // Page-granular, zero-filled memory at a page-aligned bus address.
    virtual std::unique_ptr<HostMemory> share_host_memory(size_t bytes) = 0;

    // Signal `eventfd` when MSI-X `vector` fires; eventfd -1 unbinds. The caller keeps
    // ownership of the descriptor.
    virtual void bind_irq(uint32_t vector, int eventfd) = 0;

    // Maps the function's doorbell pages. Called once per device by the queue layer.
    virtual std::shared_ptr<DoorbellMapping> map_doorbells() = 0;

    virtual const BackendIdentity& identity() const = 0;

    // Clients attached to the chip as functions other than this one: pid (0 if unknown),
    // the name they gave, contexts they hold. UNSUPPORTED where the backend cannot tell.
    struct OtherClient {
        uint32_t function = 0;
        uint32_t pid = 0;
        std::string name;
        uint32_t contexts = 0;
    };
    virtual std::vector<OtherClient> other_clients() = 0;
};

}  // namespace jal::backend
