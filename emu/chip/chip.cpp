#include "emu/chip/chip.hpp"

#include "emu/mgmt/native_core.hpp"
#include "emu/tile_exec/timing_rates.hpp"
#include "emu/util/log.hpp"
#include "jal/hw/events.h"
#include "jal/hw/mgmt.h"

#include <bit>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace jal::emu {

namespace {
constexpr std::uint64_t kModelStepNs = 250'000;  // power/thermal integration step
// A scrub writes one page through the owning slice's HBM port, as a DMA fill would.
constexpr auto kScrubNs = static_cast<std::uint64_t>(
    exec::rates::kLocalHbmLatencyNs + JAL_PAGE_SIZE / exec::rates::kLocalHbmBytesPerNs);
// A trial boot's image gets this long to take over the watchdog (the firmware arms its own
// at boot step 1, about 3 ms in): an image that never does is reset and the boot ROM falls
// back to the previous slot.
constexpr std::uint32_t kTrialWatchdogMs = 20;
constexpr std::uint32_t wdt_reg(std::uint32_t abs)
{
    return abs - JAL_MGMT_PERIPH_BASE - JAL_MGMT_WDT;
}
const char* cause_name(std::uint32_t c)
{
    switch (c) {
    case JAL_RESET_CAUSE_POWER_ON:
        return "power-on";
    case JAL_RESET_CAUSE_HOST:
        return "host reset";
    case JAL_RESET_CAUSE_WATCHDOG:
        return "watchdog";
    default:
        return "unknown";
    }
}
}  // namespace

Chip::Chip(const ChipConfig& config)
    : config_(config), trace_{config.trace, config.index, config.trace_op_slices},
      phy_(config.seed, config.dead_lanes),
      slices_(config.seed, config.fused_slices, config.failing_slices),
      power_(config.load_watts, config.ambient_c),
      clock_(config.speed, [this](std::uint64_t now) { step_models(now); }),
      host_(config.index, clock_), bus_(*this), links_(config.links, config.seed),
      cp_(host_, hbm_, mmu_, &slices_, &power_, &trace_),
      boot_rom_(config.index, std::string(fwimage::dev_public_key_pem()))
{
    if (trace_) {
        name_trace_tracks();
        trace_admin_queue();
    }
    if (config.fabric) {
        links_.attach_fabric(config.fabric.get(), config.domain_chip);
        config.fabric->attach(config.domain_chip, &links_, this);
    }
    // A detaching function's queue engines stop before its memory is unmapped.
    host_.on_detach = [this](int fn) { cp_.function_detached(fn); };
    host_.set_function_limits(config.max_contexts_per_fn, config.max_queues_per_fn);
    host_.set_function_memory_limit(config.max_memory_pages_per_fn);
    // Freed pages are zeroed before another tenant can get them (docs/security.md).
    mmu_.on_scrub = [this](std::uint64_t pa) {
        (void)hbm_.discard(pa, Mmu::kPage);
        clock_.advance(kScrubNs);
    };
    wire_peer_memory();
    slices_.set_synthetic_busy(config.load_watts > 0);
    if (config.debuggable) debug_ = std::make_unique<gdb::CoreDebug>(clock_, config.debug_wait);
    host_.on_post_code = [this](std::uint32_t code) {
        log(LogLevel::debug, "chip{} POST {:#04x} ({}) at {:.3f} ms", index(), code,
            jal_post_step_name(code), clock_.now_us() / 1000.0);
    };
}

Chip::~Chip()
{
    stop();
    if (config_.fabric) config_.fabric->detach(config_.domain_chip);
}

// Factory programming: the image file goes into slot A. The image build must have a valid
// one; the native build runs without (its firmware is compiled in), but takes one if given.
void Chip::provision_firmware()
{
    const bool need = config_.firmware == FirmwareMode::image;
    std::ifstream in(config_.firmware_image, std::ios::binary);
    if (!in) {
        if (need) throw std::runtime_error("cannot read firmware image " + config_.firmware_image);
        return;
    }
    const fwimage::Check c = boot_rom_.provision({std::istreambuf_iterator<char>(in), {}});
    if (c.ok()) return;
    const std::string why = "firmware image " + config_.firmware_image +
                            " is refused by the boot ROM: " + jal_fw_image_error_name(c.error) +
                            ": " + c.detail;
    if (need) throw std::runtime_error(why);
    log(LogLevel::warn, "chip{}: {}; slot A stays empty", index(), why);
}

void Chip::start()
{
    provision_firmware();
    core_thread_ = std::thread([this] { core_main(); });
}

void Chip::stop()
{
    if (!core_thread_.joinable()) return;
    clock_.request_shutdown();
    core_thread_.join();
}

void Chip::step_models(std::uint64_t now_ns)
{
    while (models_ns_ + kModelStepNs <= now_ns) {
        models_ns_ += kModelStepNs;
        const std::uint32_t powered = slices_.powered_count();
        const std::uint64_t busy = slices_.busy() & ~slices_.gated();
        PowerInputs in;
        in.slices_powered = powered;
        in.busy_fraction = powered ? static_cast<double>(std::popcount(busy)) / powered : 0.0;
        power_.step(kModelStepNs * 1e-9, in);
    }
}

void Chip::apply_reset(std::uint32_t cause)
{
    log(LogLevel::info, "chip{}: management core reset ({}) at {:.3f} ms", index(),
        cause_name(cause), clock_.now_us() / 1000.0);
    const bool chip_reset = cause != JAL_RESET_CAUSE_WATCHDOG;
    if (!chip_reset) ++watchdog_resets_;
    if (chip_reset) {
        slices_.reset();
        phy_.reset();
        links_.reset();
        power_.reset();
        cp_.reset();   // every user queue disabled
        mmu_.reset();  // every context's mappings gone
        hbm_.clear();  // and their data: the next boot's tenants start from zeroed HBM
    }
    host_.reset(chip_reset);
    bus_.reset();
    clock_.core_reset();
    reset_cause_ = cause;
}

void Chip::core_main()
{
    reset_cause_ = JAL_RESET_CAUSE_POWER_ON;
    for (;;) {
        ++boot_count_;
        try {
            boot_once();
            return;
        } catch (const CoreReset& r) {
            apply_reset(r.cause);
        } catch (const CoreShutdown&) {
            return;
        } catch (const std::runtime_error& e) {
            log(LogLevel::error, "chip{}: {}; the management core stays halted", index(), e.what());
            return;
        }
    }
}

// The boot ROM picks and verifies the slot, then hands over; returns only if the firmware
// does (it never should).
void Chip::boot_once()
{
    BootRom::Boot boot = boot_rom_.select(reset_cause_);
    if (boot.trial) {
        clock_.wdt_write(wdt_reg(JAL_WDT_TIMEOUT_MS), kTrialWatchdogMs);
        clock_.wdt_write(wdt_reg(JAL_WDT_CTRL), 1);
    }
    if (config_.firmware == FirmwareMode::image) {
        if (boot.body.empty()) throw std::runtime_error("boot ROM: no firmware image to run");
        run_firmware_image(FirmwareImage{std::move(boot.body), config_.firmware_image});
    } else {
        run_firmware_native();
    }
    log(LogLevel::error, "chip{}: firmware returned; halting the management core", index());
}

void Chip::run_firmware_native()
{
    NativeCore(*this).run();
}

// A fresh Unicorn instance per boot: RAM starts undefined and the image is reloaded.
void Chip::run_firmware_image(FirmwareImage image)
{
    UnicornCore core(*this, image, debug_.get());
    image_core_ = &core;
    try {
        core.run();
    } catch (...) {
        image_core_ = nullptr;
        throw;
    }
}

std::optional<gdb::Registers> Chip::core_registers()
{
    if (!image_core_) return std::nullopt;
    return image_core_->registers();
}

}  // namespace jal::emu
