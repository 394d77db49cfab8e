// The function's admin registers as userlib's admin queue expects them, served in this
// process. With the kernel driver the admin queue on the chip belongs to the driver, and
// user space reaches the device through ioctls that check what each open file may do. So
// the kmd backend presents a virtual admin queue: enabling it, ringing SQ_TAIL and reading
// completions behave as the device's do (docs/device-interface.md §5), and each command is
// carried out by the matching ioctl. The device layer above (jal::ChipFunction, jalctl) runs
// unchanged on either backend.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include <jal/hw/admin.h>

#include "bus_registry.hpp"
#include "kmd_doorbells.hpp"
#include "kmd_file.hpp"

namespace jal::kmd {

class KmdAdminShim {
public:
    KmdAdminShim(std::shared_ptr<const KmdFile> file, std::shared_ptr<BusRegistry> registry);

    // The per-function admin registers and RESET; false for any other offset.
    bool read(uint32_t offset, uint32_t& value);
    bool write(uint32_t offset, uint32_t value);
    // Vector 0: where completions are announced.
    void bind_admin_irq(int eventfd);
    // Told when queues go away so their doorbell pages are mapped afresh.
    void set_doorbells(std::weak_ptr<KmdDoorbells> doorbells);

private:
    void enable_locked();
    void process_locked();
    jal_admin_cqe execute(const jal_admin_sqe& sqe);
    uint32_t* plain_register(uint32_t offset);
    uint32_t run_ioctl(const jal_admin_sqe& sqe, std::byte* data, uint32_t& result);
    template <typename Arg>
    std::optional<uint32_t> call(unsigned long request, Arg& arg,
                                 std::optional<uint32_t> einval_status = std::nullopt);
    uint32_t create_context(uint32_t& result);
    uint32_t destroy_context(uint32_t context, uint32_t& result);
    uint32_t alloc_memory(const jal_admin_sqe& sqe, std::byte* data, uint32_t& result);
    uint32_t create_queue(const jal_admin_sqe& sqe, uint32_t& result);
    uint32_t destroy_queue(uint32_t queue);
    uint32_t pass_through(const jal_admin_sqe& sqe, std::byte* data, uint32_t& result);
    void chip_reset_locked(bool admin_command, jal_status* status);
    void forget_doorbells(int queue);  // -1: all

    std::shared_ptr<const KmdFile> file_;
    std::shared_ptr<BusRegistry> registry_;
    std::weak_ptr<KmdDoorbells> doorbells_;
    std::mutex mutex_;
    uint32_t sq_lo_ = 0, sq_hi_ = 0, cq_lo_ = 0, cq_hi_ = 0, qsize_ = 0, ctrl_ = 0, status_ = 0;
    uint32_t sq_tail_ = 0, cq_head_ = 0, intr_mask_ = 0;
    uint16_t sq_head_ = 0, cq_tail_ = 0, phase_ = 1;
    int admin_eventfd_ = -1;
    std::map<uint32_t, uint32_t> queue_context_;  // queues created through this shim
};

}  // namespace jal::kmd
