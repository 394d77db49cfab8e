// The chip's host-facing side: the BAR0 register file, the host functions attached to it
// (each with its own admin queue registers, interrupt vectors and memory), and the
// firmware-side view of the same registers (the HOSTIF block of jal/hw/mgmt.h).
// Host transport threads and the management core touch it concurrently.
#pragma once

#include "emu/chip/host_memory.hpp"
#include "emu/chip/irq_eventfd.hpp"
#include "emu/cp/doorbells.hpp"
#include "jal/hw/admin.h"
#include "jal/hw/mgmt.h"
#include "jal/hw/pci.h"
#include "jal/hw/regs.h"

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace jal::emu {

// Where the host interface reports what the management core must notice.
class HostEvents {
public:
    virtual ~HostEvents() = default;
    virtual void raise(std::uint32_t events) = 0;         // JAL_EV_* bits
    virtual void request_reset(std::uint32_t cause) = 0;  // JAL_RESET_CAUSE_*
};

class HostInterface {
public:
    HostInterface(std::uint32_t chip_index, HostEvents& events);
    ~HostInterface();

    // ---- host side (transport threads) ----
    // Attaches a new host function; returns its index, or -1 when all are taken.
    int attach();
    void detach(int fn);
    std::uint64_t host_read(int fn, std::uint32_t bar, std::uint32_t offset, std::uint32_t width);
    // Returns a jal_status (only for malformed accesses; unknown registers are ignored).
    std::uint32_t host_write(int fn, std::uint32_t bar, std::uint32_t offset, std::uint32_t width,
                             std::uint64_t value);
    HostMemory& memory(int fn) { return *fns_[fn].memory; }
    // Binds MSI-X `vector` of `fn` to eventfd `fd` (ownership passes; -1 unbinds). Any
    // other kind of descriptor is refused (JAL_STATUS_INVALID_FIELD) and closed.
    std::uint32_t set_irq(int fn, std::uint32_t vector, int fd);
    // The function's BAR2 doorbells, created on first use; nullptr for an absent function.
    // A detach drops them, so the next client of the slot gets fresh ones.
    std::shared_ptr<Doorbells> doorbells(int fn);
    bool present(int fn) const;
    // Who holds function fn (for jalctl's client list): recorded at HELLO.
    struct ClientRecord {
        bool present = false;
        std::uint32_t pid = 0;
        std::uint32_t contexts = 0;  // as the firmware last published (JAL_FN_CONTEXTS)
        std::string name;
    };
    void set_client(int fn, std::uint32_t pid, std::string name);
    ClientRecord client(int fn) const;
    // Called by detach() before the function's memory is cleared (the chip stops the
    // function's queue engines here). Not called with the interface's lock held.
    std::function<void(int fn)> on_detach;

    // ---- management-core side ----
    std::uint32_t fw_read(std::uint32_t offset);  // offset inside the HOSTIF block
    void fw_write(std::uint32_t offset, std::uint32_t value);
    // Device-initiated copy to/from function memory; returns a jal_status.
    std::uint32_t dma(std::uint32_t fn, std::uint64_t host_addr, void* local, std::uint32_t len,
                      bool to_host);
    void raise_msi(std::uint32_t fn, std::uint32_t vector);
    // JAL_HOSTIF_FN_LIMITS: contexts and user queues each function may hold (0: no limit).
    void set_function_limits(std::uint32_t contexts, std::uint32_t queues)
    {
        fn_limits_ = (contexts & 0xffff) | (queues & 0xffff) << 16;
    }
    // JAL_HOSTIF_FN_MEM_LIMIT: device-memory pages each function may hold (0: no limit).
    void set_function_memory_limit(std::uint32_t pages) { fn_mem_limit_ = pages; }

    // Chip or management-core reset: queues disabled, firmware-owned registers cleared.
    void reset(bool chip_reset);

    std::uint32_t status() const;
    // Called with every POST code the firmware writes (for the log).
    std::function<void(std::uint32_t)> on_post_code;
    // The admin queue's traffic as the firmware's DMA carries it (jal-emu --trace): a
    // command read from function fn's submission ring, and a completion entry once its
    // phase (written last) makes it visible to the host. Set before the core starts;
    // called on the management-core thread, without the interface's lock.
    std::function<void(std::uint32_t fn, const jal_admin_sqe&)> on_admin_fetch;
    std::function<void(std::uint32_t fn, const jal_admin_cqe&)> on_admin_complete;

private:
    struct Function {
        bool present = false;
        std::uint32_t sq_lo = 0, sq_hi = 0, cq_lo = 0, cq_hi = 0, qsize = 0, ctrl = 0;
        std::uint32_t admin_status = 0, sq_tail = 0, cq_head = 0, intr_mask = 0, generation = 0,
                      attaches = 0;
        std::uint32_t contexts = 0;  // JAL_FN_CONTEXTS, as the firmware last published it
        std::uint32_t pid = 0;
        std::string name;
        std::array<std::shared_ptr<IrqEventfd>, JAL_MSIX_VECTORS> irq;
        std::unique_ptr<HostMemory> memory = std::make_unique<HostMemory>();
        std::shared_ptr<Doorbells> doorbells;
    };

    void bump_locked(int fn);  // record news for the firmware about function fn
    // Which admin ring entry a DMA of fn touches, if any (for on_admin_*).
    enum class AdminRing { none, sq_entry, cq_phase };
    AdminRing admin_ring_locked(const Function& f, std::uint64_t host_addr, std::uint32_t len,
                                bool to_host) const;
    void observe_admin(std::uint32_t fn, HostMemory& mem, AdminRing ring, std::uint64_t host_addr,
                       const void* local) const;
    void close_irqs_locked(Function& f);

    const std::uint32_t chip_index_;
    HostEvents& events_;
    mutable std::mutex mutex_;
    std::array<Function, JAL_MGMT_MAX_FUNCS> fns_;
    std::uint32_t func_events_ = 0;
    std::uint32_t fn_mem_limit_ = 0;
    std::uint32_t fn_limits_ = 0;
    // Registers the firmware publishes.
    std::uint32_t reset_generation_ = 0;  // JAL_REG_RESET_GENERATION
    std::uint32_t admin_progress_ = 0;    // JAL_REG_ADMIN_PROGRESS
    std::uint32_t version_ = 0, cap_ = 0, fw_version_ = 0, status_ = 0, boot_status_ = 0,
                  post_code_ = 0, fault_ = 0;
    std::array<std::uint32_t, JAL_REG_SCRATCH_COUNT> scratch_{};
};

}  // namespace jal::emu
