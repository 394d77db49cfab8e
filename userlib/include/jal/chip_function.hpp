// jal::ChipFunction: one Jalapeño chip function, as the device layer of libjal sees it.
//
// Which backend carries the accesses (the jal-emu socket today, the kernel driver later)
// is decided when the device is opened; nothing in this interface depends on it.
// Every method throws jal::Error on failure, with a message that starts "device N: ".
// A ChipFunction may be used from several threads at once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <jal/api.h>
#include <jal/device_types.hpp>
#include <jal/emu_dir.hpp>
#include <jal/error.hpp>

namespace jal {

struct OpenOptions {
    std::string emu_dir;                            // empty: default_emu_dir()
    std::chrono::milliseconds reply_timeout{5000};  // transport round trips
    std::chrono::milliseconds admin_timeout{5000};  // admin commands, and enabling the queue
    std::string client_name = "libjal";             // shown in the emulator's log
};

class JAL_API ChipFunction {
public:
    // Devices present, by index: the jal<N>.sock sockets in `emu_dir` (empty: the default).
    static std::vector<DeviceEntry> enumerate(const std::string& emu_dir = {});

    // Connects to device `index`. Does not wait for it to boot. Throws NO_DEVICE with a hint
    // when nothing is there.
    static ChipFunction open(unsigned index, const OpenOptions& options = {});

    ChipFunction(ChipFunction&&) noexcept;
    ChipFunction& operator=(ChipFunction&&) noexcept;
    ~ChipFunction();

    unsigned index() const;
    std::string location() const;  // socket path (or device node)
    uint32_t host_function() const;

    // Boot and health registers; usable in any state.
    DeviceStatus status();
    // Polls until READY or FAILED or `timeout`; returns the last status (whose state may
    // still be booting: check it).
    DeviceStatus wait_ready(std::chrono::milliseconds timeout);

    // Admin commands. They need a device that has finished booting (READY, or FAILED if its
    // firmware still serves the admin queue): NOT_READY while booting.
    jal_identify identify();
    jal_telemetry telemetry();
    jal_slice_map slice_map();
    // Contexts, queues and device memory per host function and per logical slice, and the
    // chip's used and free memory (interface 1.6; INVALID_OPCODE from older firmware).
    jal_usage usage();
    HbmReport hbm_report(uint32_t first_channel, uint32_t count);
    // The fabric ports [first_port, first_port + count): wiring, state, width, margins,
    // counters (interface 1.8; INVALID_OPCODE from older firmware).
    LinkReport link_report(uint32_t first_port = 0, uint32_t count = JAL_LINK_PORTS);
    uint32_t power_limit_mw();
    // Returns the limit in force, which the device may have clamped.
    uint32_t set_power_limit_mw(uint32_t milliwatts);
    // The limit every boot starts with, kept across resets (not power cycles); 0: none.
    // Setting it sets the limit in force too; 0 clears it. Interface 1.6 (INVALID_FIELD
    // from older firmware).
    uint32_t persistent_power_limit_mw();
    uint32_t set_persistent_power_limit_mw(uint32_t milliwatts);
    // Events with sequence numbers from `first_seq` on (older ones may have been lost).
    EventLog event_log(uint32_t first_seq = 0);
    PostTrail post_trail();

    // Resets the chip and waits (bounded) for it to boot again. `progress` is called at each
    // state change and about once a second. The outcome says truthfully whether the reset
    // took effect and whether the device came back; it does not throw for a device that
    // stayed down.
    ResetOutcome reset(ResetMethod method, std::chrono::milliseconds timeout,
                       const std::function<void(const ResetProgress&)>& progress = {});

    // Firmware update (docs/firmware.md 10): the slots, versions and rollback fuses as the
    // chip's boot ROM reports them.
    jal_fw_status firmware_status();
    // Writes a signed image into the inactive slot, in chunks; `progress` gets the bytes
    // written so far after each. The chip checks it only when it is activated: by
    // reset(ResetMethod::firmware_update, ...), which throws IMAGE_REJECTED naming the reason
    // (jal_fw_image_error) when the boot ROM refuses it, the running image carrying on.
    void firmware_download(const void* image, size_t bytes,
                           const std::function<void(size_t)>& progress = {});

    // The other clients attached to this chip (not this one), for a tool about to reset
    // it. UNSUPPORTED where the backend cannot tell.
    std::vector<AttachedClient> other_clients();

    // Raw admin access, for tests and bring-up tools. When `buffer_bytes` > 0 a zeroed
    // host buffer of that size is shared and its bus address put in sqe.data_addr
    // (data_len is left as given); otherwise sqe goes to the device as is. The cid is
    // assigned here. Error completions are returned, not thrown.
    RawAdminResult admin_execute_raw(const jal_admin_sqe& sqe, size_t buffer_bytes = 0);
    // Submits without waiting; returns the cid to pass to admin_wait_raw.
    uint16_t admin_submit_raw(const jal_admin_sqe& sqe, size_t buffer_bytes = 0);
    RawAdminResult admin_wait_raw(uint16_t cid);

    class Impl;
    // libjal's own layers above the device (contexts, queues) reach its state here.
    Impl& impl() { return *impl_; }

private:
    explicit ChipFunction(std::unique_ptr<Impl> impl);
    std::unique_ptr<Impl> impl_;
};

}  // namespace jal
