#include "emu/mgmt/boot_rom.hpp"

#include "emu/util/log.hpp"
#include "jal/hw/status.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace jal::emu {

namespace {
constexpr std::uint32_t reg(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_FWU;
}
char slot_name(unsigned slot)
{
    return static_cast<char>('A' + slot);
}
}  // namespace

BootRom::BootRom(std::uint32_t chip_index, std::string public_key_pem)
    : chip_(chip_index), key_pem_(std::move(public_key_pem))
{}

fwimage::Check BootRom::check(const Slot& s) const
{
    if (s.bytes.empty()) {
        fwimage::Check c;
        c.error = JAL_FW_IMAGE_EMPTY;
        c.detail = "the slot is empty";
        return c;
    }
    return fwimage::verify(s.bytes, key_pem_, fuses_);
}

jal_fw_slot_info BootRom::Slot::info() const
{
    jal_fw_slot_info i{};
    if (bytes.empty()) return i;
    jal_fw_image_header h{};
    std::memcpy(&h, bytes.data(), std::min(sizeof h, bytes.size()));
    i.fw_version = h.fw_version;
    i.rollback = h.rollback;
    i.body_len = h.body_len;
    std::memcpy(i.build, h.build, sizeof i.build - 1);
    return i;
}

fwimage::Check BootRom::provision(std::vector<std::uint8_t> image)
{
    std::lock_guard lock(mutex_);
    slots_[0].bytes = std::move(image);
    fwimage::Check c = check(slots_[0]);
    if (!c.ok()) slots_[0].bytes.clear();
    return c;
}

void BootRom::fall_back(const char* why)
{
    log(LogLevel::error, "chip{}: boot ROM: trial of slot {} failed ({}); falling back to slot {}",
        chip_, slot_name(running_), why, slot_name(previous_));
    failed_slot_ = static_cast<int>(running_);
    fell_back_ = true;
    trial_ = false;
    running_ = previous_;
}

BootRom::Boot BootRom::select(std::uint32_t reset_cause)
{
    std::lock_guard lock(mutex_);
    if (trial_)
        fall_back(reset_cause == JAL_RESET_CAUSE_WATCHDOG ? "watchdog reset before READY"
                                                          : "reset before READY");
    else if (pending_ >= 0) {
        previous_ = running_;
        running_ = static_cast<unsigned>(pending_);
        pending_ = -1;
        trial_ = true;
        fell_back_ = false;
        log(LogLevel::info, "chip{}: boot ROM: booting slot {} on trial", chip_,
            slot_name(running_));
    }
    Boot boot;
    if (slots_[running_].bytes.empty() && !trial_) return boot;  // native, no image
    fwimage::Check c = check(slots_[running_]);
    if (!c.ok() && trial_) {
        fall_back(jal_fw_image_error_name(c.error));
        c = check(slots_[running_]);
    }
    if (!c.ok())
        throw std::runtime_error(fmt::format("boot ROM: slot {} is not bootable: {}: {}",
                                             slot_name(running_), jal_fw_image_error_name(c.error),
                                             c.detail));
    const auto& bytes = slots_[running_].bytes;
    boot.body.assign(bytes.begin() + JAL_FW_HEADER_SIZE, bytes.end());
    boot.slot = running_;
    boot.trial = trial_;
    return boot;
}

std::uint32_t BootRom::read(std::uint32_t offset)
{
    std::lock_guard lock(mutex_);
    switch (offset) {
    case reg(JAL_FWU_STATUS):
        return status_;
    case reg(JAL_FWU_DETAIL):
        return detail_;
    case reg(JAL_FWU_RUNNING_VERSION):
        return slots_[running_].info().fw_version;
    default:
        return 0;
    }
}

void BootRom::write(std::uint32_t offset, std::uint32_t value, const Dma& dma)
{
    std::unique_lock lock(mutex_);
    switch (offset) {
    case reg(JAL_FWU_FN):
        fn_ = value;
        return;
    case reg(JAL_FWU_HOST_LO):
        host_lo_ = value;
        return;
    case reg(JAL_FWU_HOST_HI):
        host_hi_ = value;
        return;
    case reg(JAL_FWU_LEN):
        len_ = value;
        return;
    case reg(JAL_FWU_OFFSET):
        offset_ = value;
        return;
    case reg(JAL_FWU_CMD):
        detail_ = 0;
        status_ = command(value, dma);
        return;
    default:
        return;
    }
}

std::uint32_t BootRom::command(std::uint32_t cmd, const Dma& dma)
{
    switch (cmd) {
    case JAL_FWU_CMD_WRITE:
        return write_chunk(dma);
    case JAL_FWU_CMD_ACTIVATE:
        return activate();
    case JAL_FWU_CMD_STATUS:
        return send_status(dma);
    case JAL_FWU_CMD_CONFIRM:
        confirm();
        return JAL_STATUS_OK;
    default:
        return JAL_STATUS_INVALID_FIELD;
    }
}

// The inactive slot is the fall-back while a trial runs: it is not written then.
std::uint32_t BootRom::write_chunk(const Dma& dma)
{
    if (trial_) return JAL_STATUS_BUSY;
    if (offset_ != 0 && offset_ != staged_) return JAL_STATUS_INVALID_FIELD;
    if (len_ == 0 || len_ > JAL_FW_SLOT_BYTES - offset_) return JAL_STATUS_OUT_OF_RANGE;
    Slot& slot = slots_[1 - running_];
    if (offset_ == 0) {  // erase
        slot.bytes.clear();
        staged_ = 0;
        if (pending_ == static_cast<int>(1 - running_)) pending_ = -1;
    }
    slot.bytes.resize(std::size_t{offset_} + len_);
    const std::uint64_t host = std::uint64_t{host_hi_} << 32 | host_lo_;
    for (std::uint32_t done = 0; done < len_;) {
        const std::uint32_t n = std::min(len_ - done, JAL_DMA_LEN_MAX);
        const std::uint32_t st =
            dma(fn_, host + done, slot.bytes.data() + offset_ + done, n, false);
        if (st != JAL_STATUS_OK) {
            slot.bytes.resize(staged_);
            return st;
        }
        done += n;
    }
    staged_ = offset_ + len_;
    detail_ = staged_;
    return JAL_STATUS_OK;
}

std::uint32_t BootRom::activate()
{
    if (trial_) return JAL_STATUS_BUSY;
    const unsigned target = 1 - running_;
    const fwimage::Check c = check(slots_[target]);
    if (!c.ok()) {
        log(LogLevel::warn, "chip{}: boot ROM: image in slot {} rejected: {}: {}", chip_,
            slot_name(target), jal_fw_image_error_name(c.error), c.detail);
        detail_ = c.error;
        return JAL_STATUS_IMAGE_REJECTED;
    }
    pending_ = static_cast<int>(target);
    log(LogLevel::info,
        "chip{}: boot ROM: slot {} (version {}, rollback {}) boots on trial at "
        "the next reset",
        chip_, slot_name(target), fwimage::version_text(c.header.fw_version), c.header.rollback);
    return JAL_STATUS_OK;
}

void BootRom::confirm()
{
    const jal_fw_slot_info info = slots_[running_].info();
    if (trial_)
        log(LogLevel::info, "chip{}: boot ROM: slot {} (version {}) confirmed", chip_,
            slot_name(running_), fwimage::version_text(info.fw_version));
    trial_ = false;
    // A confirmed image's rollback counter is burnt into the fuses: nothing older runs again.
    if (!slots_[running_].bytes.empty()) fuses_ = std::max(fuses_, info.rollback);
}

jal_fw_status BootRom::status_locked() const
{
    jal_fw_status st{};
    st.running_slot = running_;
    st.flags = (trial_ ? JAL_FW_STATUS_TRIAL : 0) | (fell_back_ ? JAL_FW_STATUS_FELL_BACK : 0) |
               (pending_ >= 0 ? JAL_FW_STATUS_UPDATE_READY : 0);
    st.rollback_fuses = fuses_;
    st.failed_slot = failed_slot_ < 0 ? 0xffffffffu : static_cast<std::uint32_t>(failed_slot_);
    st.staged_bytes = staged_;
    const auto id = fwimage::key_id(key_pem_);
    std::memcpy(st.key_id, id.data(), id.size());
    for (unsigned i = 0; i < JAL_FW_SLOTS; ++i) {
        st.slots[i] = slots_[i].info();
        const fwimage::Check c = check(slots_[i]);
        st.slots[i].state = c.error == JAL_FW_IMAGE_EMPTY ? JAL_FW_SLOT_EMPTY
                            : c.ok()                      ? JAL_FW_SLOT_VALID
                                                          : JAL_FW_SLOT_INVALID;
        st.slots[i].reject_reason = c.error == JAL_FW_IMAGE_EMPTY ? 0 : c.error;
    }
    return st;
}

jal_fw_status BootRom::status()
{
    std::lock_guard lock(mutex_);
    return status_locked();
}

std::uint32_t BootRom::send_status(const Dma& dma)
{
    jal_fw_status st = status_locked();
    if (len_ < sizeof st) return JAL_STATUS_INVALID_LENGTH;
    const std::uint64_t host = std::uint64_t{host_hi_} << 32 | host_lo_;
    return dma(fn_, host, &st, sizeof st, true);
}

}  // namespace jal::emu
