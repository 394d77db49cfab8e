#include "emu/chip/chip.hpp"

#include "emu/mgmt/native_core.hpp"
#include "emu/tile_exec/timing_rates.hpp"
#include "emu/util/log.hpp"
#include "jal/hw/events.h"
#include "jal/hw/mgmt.h"

#include <bit>
#include <stdexcept>

namespace jal::emu {

namespace {
constexpr std::uint64_t kModelStepNs = 250'000;  // power/thermal integration step
// A scrub writes one page through the owning slice's HBM port, as a DMA fill would.
constexpr auto kScrubNs = static_cast<std::uint64_t>(
    exec::rates::kLocalHbmLatencyNs + JAL_PAGE_SIZE / exec::rates::kLocalHbmBytesPerNs);
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
    : config_(config), trace_{config.trace, config.index}, phy_(config.seed, config.dead_lanes),
      slices_(config.seed, config.fused_slices, config.failing_slices),
      power_(config.load_watts, config.ambient_c),
      clock_(config.speed, [this](std::uint64_t now) { step_models(now); }),
      host_(config.index, clock_), bus_(*this), cp_(host_, hbm_, mmu_, &slices_, &power_, &trace_)
{
    if (trace_) name_trace_tracks();
    // A detaching function's queue engines stop before its memory is unmapped.
    host_.on_detach = [this](int fn) { cp_.function_detached(fn); };
    host_.set_function_limits(config.max_contexts_per_fn, config.max_queues_per_fn);
    host_.set_function_memory_limit(config.max_memory_pages_per_fn);
    // Freed pages are zeroed before another tenant can get them (docs/security.md).
    mmu_.on_scrub = [this](std::uint64_t pa) {
        (void)hbm_.discard(pa, Mmu::kPage);
        clock_.advance(kScrubNs);
    };
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
}

void Chip::start()
{
    if (config_.firmware == FirmwareMode::image)
        image_ = load_firmware_image(config_.firmware_image);
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
            if (config_.firmware == FirmwareMode::image)
                run_firmware_image();
            else
                run_firmware_native();
            log(LogLevel::error, "chip{}: firmware returned; halting the management core", index());
            return;
        } catch (const CoreReset& r) {
            apply_reset(r.cause);
        } catch (const CoreShutdown&) {
            return;
        }
    }
}

void Chip::run_firmware_native()
{
    NativeCore(*this).run();
}

// A fresh Unicorn instance per boot: RAM starts undefined and the image is reloaded.
void Chip::run_firmware_image()
{
    UnicornCore core(*this, image_, debug_.get());
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
