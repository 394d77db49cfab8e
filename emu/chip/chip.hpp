// One emulated chip: its models (slices, HBM and PHY, power and thermal), its host
// interface, and the management core that runs the firmware on a thread of its own.
#pragma once

#include <array>

#include "emu/chip/chip_config.hpp"
#include "emu/chip/chip_links.hpp"
#include "emu/chip/fault_injector.hpp"
#include "emu/chip/hbm_memory.hpp"
#include "emu/chip/hbm_phy.hpp"
#include "emu/chip/host_interface.hpp"
#include "emu/chip/mmu.hpp"
#include "emu/chip/power_model.hpp"
#include "emu/chip/slices.hpp"
#include "emu/cp/command_processor.hpp"
#include "emu/mgmt/core_clock.hpp"
#include "emu/mgmt/peripheral_bus.hpp"
#include "emu/trace/admin_trace.hpp"

#include "emu/gdb/core_debug.hpp"
#include "emu/mgmt/boot_rom.hpp"
#include "emu/mgmt/unicorn_core.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <thread>

namespace jal::emu {

namespace fabric {
class Domain;
}  // namespace fabric

class Chip {
public:
    explicit Chip(const ChipConfig& config);
    ~Chip();
    Chip(const Chip&) = delete;
    Chip& operator=(const Chip&) = delete;

    void start();  // power on: the management core starts booting the firmware
    void stop();

    std::uint32_t index() const { return config_.index; }
    const ChipConfig& config() const { return config_; }
    HostInterface& host() { return host_; }
    CoreClock& clock() { return clock_; }
    PeripheralBus& bus() { return bus_; }
    Slices& slices() { return slices_; }
    HbmPhy& phy() { return phy_; }
    HbmMemory& hbm() { return hbm_; }
    PowerModel& power() { return power_; }
    ChipLinks& links() { return links_; }
    // The fabric domain the chip's process joined (jal-emu --domain), or null. Set once the
    // domain exists, cleared before it goes.
    fabric::Domain* domain() const { return domain_.load(); }
    void attach_domain(fabric::Domain* d) { domain_.store(d); }
    Mmu& mmu() { return mmu_; }
    CommandProcessor& cp() { return cp_; }
    BootRom& boot_rom() { return boot_rom_; }
    FaultInjector& faults() { return faults_; }
    std::uint32_t reset_cause() const { return reset_cause_; }
    std::uint32_t boot_count() const { return boot_count_; }
    std::uint32_t watchdog_resets() const { return watchdog_resets_; }
    // JAL_SYS_RETAIN(n): survives resets, zero at power-on.
    std::uint32_t retained(std::uint32_t n) const
    {
        return n < retained_.size() ? retained_[n] : 0;
    }
    void set_retained(std::uint32_t n, std::uint32_t v)
    {
        if (n < retained_.size()) retained_[n] = v;
    }
    // The RLOG block (JAL_MGMT_RLOG): survives resets, zero at power-on.
    std::uint32_t retained_log(std::uint32_t word) const
    {
        return word < retained_log_.size() ? retained_log_[word] : 0;
    }
    void set_retained_log(std::uint32_t word, std::uint32_t v)
    {
        if (word < retained_log_.size()) retained_log_[word] = v;
    }
    const ChipTrace& trace() const { return trace_; }
    // The debugger's hold on the management core; null unless config().debuggable.
    gdb::CoreDebug* debug() { return debug_.get(); }
    // The image's core registers, on the management-core thread (console commands);
    // nullopt when the firmware runs natively.
    std::optional<gdb::Registers> core_registers();

    // Brings the models up to modelled time `now_ns` (management-core thread).
    void step_models(std::uint64_t now_ns);

private:
    void core_main();
    void provision_firmware();
    void boot_once();
    void run_firmware_native();
    void run_firmware_image(FirmwareImage image);
    void apply_reset(std::uint32_t cause);
    void name_trace_tracks();  // chip_trace.cpp
    void trace_admin_queue();  // chip_trace.cpp
    void wire_peer_memory();   // chip_peer.cpp: the MMU's remote pages over the fabric ports

    ChipConfig config_;
    ChipTrace trace_;                          // before cp_, which keeps a pointer to it
    std::unique_ptr<AdminTrace> admin_trace_;  // null unless tracing
    HbmMemory hbm_;
    HbmPhy phy_;
    Slices slices_;
    PowerModel power_;
    CoreClock clock_;
    HostInterface host_;
    PeripheralBus bus_;
    Mmu mmu_;
    ChipLinks links_;
    std::atomic<fabric::Domain*> domain_{nullptr};
    CommandProcessor cp_;  // after everything its engines use, so it stops them first
    std::uint64_t models_ns_ = 0;
    std::uint32_t reset_cause_ = 0, boot_count_ = 0, watchdog_resets_ = 0;
    std::array<std::uint32_t, JAL_SYS_RETAIN_COUNT> retained_{};
    std::array<std::uint32_t, JAL_RLOG_ENTRIES * 16> retained_log_{};
    BootRom boot_rom_;
    FaultInjector faults_{*this};
    std::unique_ptr<gdb::CoreDebug> debug_;
    UnicornCore* image_core_ = nullptr;  // while run_firmware_image() runs
    std::thread core_thread_;
};

}  // namespace jal::emu
