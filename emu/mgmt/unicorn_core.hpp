// Runs the firmware image built for the Cortex-M7 (what would be flashed) on Unicorn.
// Peripheral accesses go to the chip's PeripheralBus through MMIO callbacks; modelled
// time advances by executed instructions (one per cycle at JAL_MGMT_CORE_HZ) and by
// peripheral access costs; WFI returns control to the chip, which waits for an event.
// Returns only by exception: CoreReset or CoreShutdown.
#pragma once

#include <cstdint>
#include <exception>
#include <string>
#include <vector>

struct uc_struct;

namespace jal::emu {

class Chip;

// A firmware image: the raw flash contents (vector table at offset 0).
struct FirmwareImage {
    std::vector<std::uint8_t> bytes;
    std::string path;
};
// Reads and checks an image file (size, vector table sanity). Throws std::runtime_error.
FirmwareImage load_firmware_image(const std::string& path);

class UnicornCore {
public:
    UnicornCore(Chip& chip, const FirmwareImage& image);
    ~UnicornCore();
    UnicornCore(const UnicornCore&) = delete;
    UnicornCore& operator=(const UnicornCore&) = delete;

    void run();

private:
    static std::uint64_t mmio_read(uc_struct* uc, std::uint64_t offset, unsigned size, void* self);
    static void mmio_write(uc_struct* uc, std::uint64_t offset, unsigned size, std::uint64_t value,
                           void* self);
    static void on_block(uc_struct* uc, std::uint64_t address, std::uint32_t size, void* self);
    void flush_cycles();
    void fail(const std::exception_ptr& e);

    Chip& chip_;
    uc_struct* uc_ = nullptr;
    std::uint64_t pending_cycles_ = 0;
    std::uint64_t cycle_remainder_ps_ = 0;
    std::exception_ptr stop_reason_;  // a reset or shutdown raised inside a callback
};

}  // namespace jal::emu
