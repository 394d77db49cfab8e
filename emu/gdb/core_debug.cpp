#include "emu/gdb/core_debug.hpp"

#include "emu/mgmt/core_clock.hpp"

#include <sys/eventfd.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>
#include <memory>
#include <stdexcept>
#include <utility>
#include <vector>

namespace jal::emu::gdb {

CoreDebug::CoreDebug(CoreClock& clock, bool wait_at_power_on)
    : clock_(clock), wait_at_power_on_(wait_at_power_on)
{
    wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wake_fd_ < 0)
        throw std::runtime_error(std::string("eventfd for the gdb stub: ") + std::strerror(errno));
}

CoreDebug::~CoreDebug()
{
    close(wake_fd_);
}

void CoreDebug::notify()
{
    const std::uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
}

void CoreDebug::drain_wake()
{
    std::uint64_t count;
    (void)!read(wake_fd_, &count, sizeof count);
}

// ---- the stub's thread ----

void CoreDebug::attach()
{
    abandoned_ = false;
    clock_.post([this] {
        attached_ = true;
        if (core_) core_->set_exact_pc(true);
    });
}

void CoreDebug::interrupt(bool any_hold_will_do)
{
    halt_requested_ = true;
    // The core notices the request at its next translated block; an event wait notices
    // this task instead. Whichever comes first takes the request. A task that finds the
    // core already held leaves a Ctrl-C alone: it may be the next interrupt, for after the
    // core resumes. A debugger connecting wants the core halted, and a hold it reached in
    // the meantime (the power-on wait of --gdb-wait) is that halt: left pending, the
    // request would stop the core again at the debugger's first continue.
    clock_.post([this, any_hold_will_do] {
        if (in_hold_ && any_hold_will_do) take_halt_request();
        if (in_hold_ || !core_ || !take_halt_request()) return;
        pending_step_ = hold(kSigInt);
    });
}

void CoreDebug::resume(bool step, std::optional<std::uint32_t> pc)
{
    halted_ = false;
    clock_.post([this, step, pc] {
        if (pc && core_) core_->write_register(kRegPc, *pc);
        release_ = step ? Release::step : Release::cont;
    });
}

void CoreDebug::release()
{
    halted_ = false;
    halt_requested_ = false;
    clock_.post([this] {
        if (core_) {
            for (std::uint32_t address : breakpoints_) core_->set_breakpoint(address, false);
            core_->set_exact_pc(false);
        }
        breakpoints_.clear();
        attached_ = false;
        pending_step_ = false;
        release_ = Release::cont;
    });
}

void CoreDebug::on_core(std::function<void(HeldCore&)> task)
{
    auto done = std::make_shared<std::promise<bool>>();
    auto result = done->get_future();
    clock_.post([this, task = std::move(task), done] {
        if (core_) task(*core_);
        done->set_value(core_ != nullptr);
    });
    // The core serves posted tasks at once while held; waiting in slices lets a stopping
    // stub give up on a core thread that has already ended.
    while (result.wait_for(std::chrono::milliseconds(100)) != std::future_status::ready)
        if (abandoned_) throw std::runtime_error("the management core is gone");
    if (!result.get()) throw std::runtime_error("the management core is between boots");
}

// Results travel through shared state: a task is never left pointing into a caller's frame.
Registers CoreDebug::Proxy::registers()
{
    auto out = std::make_shared<Registers>();
    d_.on_core([out](HeldCore& c) { *out = c.registers(); });
    return *out;
}

bool CoreDebug::Proxy::write_register(unsigned index, std::uint32_t value)
{
    auto ok = std::make_shared<bool>(false);
    d_.on_core([=](HeldCore& c) { *ok = c.write_register(index, value); });
    return *ok;
}

bool CoreDebug::Proxy::read_memory(std::uint32_t address, std::span<std::uint8_t> out)
{
    auto buf = std::make_shared<std::vector<std::uint8_t>>(out.size());
    auto ok = std::make_shared<bool>(false);
    d_.on_core([=](HeldCore& c) { *ok = c.read_memory(address, *buf); });
    std::copy(buf->begin(), buf->end(), out.begin());
    return *ok;
}

bool CoreDebug::Proxy::write_memory(std::uint32_t address, std::span<const std::uint8_t> data)
{
    auto buf = std::make_shared<std::vector<std::uint8_t>>(data.begin(), data.end());
    auto ok = std::make_shared<bool>(false);
    d_.on_core([=](HeldCore& c) { *ok = c.write_memory(address, *buf); });
    return *ok;
}

void CoreDebug::Proxy::set_breakpoint(std::uint32_t address, bool present)
{
    CoreDebug& d = d_;
    d.on_core([&d, address, present](HeldCore& c) {
        if (present)
            d.breakpoints_.insert(address);
        else
            d.breakpoints_.erase(address);
        c.set_breakpoint(address, present);
    });
}

// ---- the core's thread ----

bool CoreDebug::take_wait_at_power_on()
{
    return std::exchange(wait_at_power_on_, false);
}

bool CoreDebug::take_pending_step()
{
    return std::exchange(pending_step_, false);
}

bool CoreDebug::hold(int signal)
{
    in_hold_ = true;
    release_ = Release::none;
    signal_ = signal;
    halted_ = true;
    notify();
    clock_.hold([this] { return release_ != Release::none; });
    in_hold_ = false;
    return release_ == Release::step;
}

void CoreDebug::bind(HeldCore* core)
{
    core_ = core;
    pending_step_ = false;  // a step asked of the previous boot's core
    if (!core) return;
    for (std::uint32_t address : breakpoints_) core->set_breakpoint(address, true);
    if (attached_) core->set_exact_pc(true);
}

}  // namespace jal::emu::gdb
