// The chip's immutable boot ROM and its firmware-update unit (FWU; jal/hw/fw_image.h).
//
// It owns what the firmware must not be able to change by itself: the two flash slots (A
// and B), the one-time-programmable rollback fuses and the public key images are checked
// against. At every core reset it chooses the slot to run and verifies it (signature, hash,
// rollback, vector table) before handing its body to the core; a newly activated image
// runs once on trial and becomes the good one only when its firmware confirms (at READY).
// A trial that ends in any reset before that falls back to the previous slot.
//
// State lives as long as the jal-emu process (a power cycle of the emulator reprovisions
// slot A from the factory image); docs/firmware.md 10.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "fwimage/image.hpp"
#include "jal/hw/fw_image.h"

namespace jal::emu {

class BootRom {
public:
    // How the FWU reaches host memory: fn, bus address, local buffer, length, direction.
    using Dma =
        std::function<std::uint32_t(std::uint32_t, std::uint64_t, void*, std::uint32_t, bool)>;

    BootRom(std::uint32_t chip_index, std::string public_key_pem);

    // Factory programming of slot A. Returns the verification (not ok: slot A stays empty).
    fwimage::Check provision(std::vector<std::uint8_t> image);

    struct Boot {
        std::vector<std::uint8_t> body;  // empty: no image (native firmware without one)
        unsigned slot = 0;
        bool trial = false;
    };
    // At each core reset, on the management-core thread. Throws std::runtime_error when no
    // slot can be booted.
    Boot select(std::uint32_t reset_cause);

    // FWU registers (offsets in the block), on the management-core thread.
    std::uint32_t read(std::uint32_t offset);
    void write(std::uint32_t offset, std::uint32_t value, const Dma& dma);

    jal_fw_status status();  // any thread

private:
    struct Slot {
        std::vector<std::uint8_t> bytes;  // header + body as written
        jal_fw_slot_info info() const;
    };
    std::uint32_t command(std::uint32_t cmd, const Dma& dma);
    std::uint32_t write_chunk(const Dma& dma);
    std::uint32_t activate();
    std::uint32_t send_status(const Dma& dma);
    void confirm();
    void fall_back(const char* why);
    fwimage::Check check(const Slot& s) const;
    jal_fw_status status_locked() const;

    const std::uint32_t chip_;
    const std::string key_pem_;
    mutable std::mutex mutex_;
    Slot slots_[JAL_FW_SLOTS];
    unsigned running_ = 0, previous_ = 0;
    int pending_ = -1;    // slot to boot on trial at the next reset
    bool trial_ = false;  // the running slot is on trial
    bool fell_back_ = false;
    int failed_slot_ = -1;
    std::uint32_t fuses_ = 0;   // OTP: only ever rises
    std::uint32_t staged_ = 0;  // bytes written to the inactive slot since its erase
    // Registers.
    std::uint32_t fn_ = 0, host_lo_ = 0, host_hi_ = 0, len_ = 0, offset_ = 0;
    std::uint32_t status_ = 0, detail_ = 0;
};

}  // namespace jal::emu
