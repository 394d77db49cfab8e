// ChipFunction::Impl: the state behind a jal::ChipFunction and the helpers its methods share.
#pragma once

#include <cstring>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <jal/chip_function.hpp>

#include "../admin/admin_queue.hpp"
#include "../backend/backend.hpp"

namespace jal {

class JAL_HIDDEN ChipFunction::Impl {
public:
    Impl(unsigned index, std::unique_ptr<backend::Backend> backend, const OpenOptions& options);
    ~Impl();

    unsigned index() const { return index_; }
    backend::Backend& backend() { return *backend_; }
    const OpenOptions& options() const { return options_; }

    // Runs `f`, prefixing any jal::Error with "device N: ". Only public entry points use
    // it, so messages are prefixed exactly once.
    template <typename F>
    auto guarded(F&& f) -> decltype(f())
    {
        try {
            return f();
        } catch (const Error& e) {
            throw Error(e.status(), "device " + std::to_string(index_) + ": " + e.what());
        }
    }

    DeviceStatus read_status();
    uint32_t read_reset_generation();

    // From now on admin commands run only while the chip is in reset generation
    // `generation`; after a reset they fail with DEVICE_RESET instead of enabling a fresh
    // admin queue (libjal's runtime pins it: its contexts and queues died with the old one).
    void pin_reset_generation(uint32_t generation);
    // The DEVICE_RESET error for a handle made in `made_in`, now `now`.
    static Error reset_error(uint32_t made_in, uint32_t now);

    // The admin queue, enabled on first use (and again after a reset or a timeout).
    // Throws NOT_READY unless the device is READY.
    std::shared_ptr<admin::AdminQueue> admin_queue();
    // Forget the queue: the device lost it (reset) or may have (timeout).
    void drop_admin_queue();

    struct Reply {
        admin::Completion completion;
        std::vector<std::byte> data;  // the data buffer, data_len bytes
    };
    // Runs an admin command with an optional data buffer of `data_len` bytes (filled from
    // `payload` when given, else zeroed) and throws "admin command X failed: <status>" for an
    // error completion.
    Reply run(uint8_t opcode, std::initializer_list<uint32_t> cdw, uint32_t data_len = 0,
              const void* payload = nullptr);

    // Raw commands submitted without waiting keep their buffer here until waited for.
    struct PendingRaw {
        std::shared_ptr<admin::AdminQueue> queue;
        std::unique_ptr<backend::HostMemory> buffer;
    };
    uint16_t submit_raw(const jal_admin_sqe& sqe, size_t buffer_bytes);
    RawAdminResult wait_raw(uint16_t cid);

private:
    unsigned index_;
    OpenOptions options_;
    std::unique_ptr<backend::Backend> backend_;
    std::mutex admin_mutex_;
    std::shared_ptr<admin::AdminQueue> admin_;
    std::optional<uint32_t> pinned_generation_;
    std::map<uint16_t, PendingRaw> pending_raw_;
    // Buffers of commands that timed out: the device may still write into them.
    std::vector<std::unique_ptr<backend::HostMemory>> orphaned_buffers_;
};

// FW_ACTIVATE, throwing IMAGE_REJECTED with the boot ROM's reason (device_firmware.cpp).
void firmware_activate(ChipFunction::Impl& impl);

// Copies a fixed-size device structure out of a reply buffer (zero-filled past its end).
template <typename T>
T copy_struct(const std::vector<std::byte>& data, size_t offset = 0)
{
    T out{};
    if (offset < data.size())
        std::memcpy(&out, data.data() + offset, std::min(sizeof out, data.size() - offset));
    return out;
}

}  // namespace jal
