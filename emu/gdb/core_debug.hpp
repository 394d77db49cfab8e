// The debugger's hold on one chip's management core, between the core's thread (which runs
// the firmware on Unicorn) and the GDB stub's thread.
//
// The stub asks for a halt; the core halts at its next translated block or event wait and
// is then *held*: it runs nothing but posted tasks (CoreClock::hold), so every register,
// memory and breakpoint request runs on the core's own thread and never races Unicorn.
// While held, modelled time stands still: the tick, the watchdog, the power model and
// pacing all wait, as a Cortex-M's debug halt freezes its timers, so a core held at a
// breakpoint is never declared hung. Host events and reset requests stay pending until the
// core runs again; console commands are still answered.
#pragma once

#include "emu/gdb/debug_target.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <set>

namespace jal::emu {
class CoreClock;
}  // namespace jal::emu

namespace jal::emu::gdb {

// What CoreDebug needs from the running core; called on the core's thread, outside Unicorn.
class HeldCore {
public:
    virtual ~HeldCore() = default;
    virtual Registers registers() = 0;
    virtual bool write_register(unsigned index, std::uint32_t value) = 0;
    virtual bool read_memory(std::uint32_t address, std::span<std::uint8_t> out) = 0;
    virtual bool write_memory(std::uint32_t address, std::span<const std::uint8_t> data) = 0;
    virtual void set_breakpoint(std::uint32_t address, bool present) = 0;
    // A debugger is attached: keep the PC exact at every instruction so that a fault stops
    // on the faulting instruction (slower; off again when the debugger leaves).
    virtual void set_exact_pc(bool on) = 0;
};

class CoreDebug {
public:
    CoreDebug(CoreClock& clock, bool wait_at_power_on);
    ~CoreDebug();
    CoreDebug(const CoreDebug&) = delete;
    CoreDebug& operator=(const CoreDebug&) = delete;

    // ---- the stub's thread ----
    bool halted() const { return halted_.load(); }
    // Readable whenever the core may have halted since the last drain (then check halted()).
    int wake_fd() const { return wake_fd_; }
    void drain_wake();
    void attach();  // a debugger connected
    // Ctrl-C: halt soon, reporting SIGINT. any_hold_will_do: a debugger connecting; a hold
    // the core is already in satisfies it.
    void interrupt(bool any_hold_will_do = false);
    void resume(bool step, std::optional<std::uint32_t> pc);
    void release();  // the debugger left: breakpoints gone, the core runs on
    // Register, memory and breakpoint access, forwarded to the core's thread; only while
    // halted(). Throws std::runtime_error if the core thread has gone (shutdown).
    DebugTarget& target() { return proxy_; }
    // Makes target() give up waiting for the core (the stub is stopping).
    void abandon() { abandoned_ = true; }

    // ---- the core's thread ----
    // One relaxed load: cheap enough for every translated block.
    bool halt_requested() const { return halt_requested_.load(std::memory_order_relaxed); }
    bool take_halt_request() { return halt_requested_.exchange(false); }
    bool attached() const { return attached_; }
    // True the first time only, with --gdb-wait: hold before the first instruction.
    bool take_wait_at_power_on();
    // Holds the core until the debugger resumes it. Returns true to single-step one
    // instruction. Throws CoreShutdown if the emulator stops meanwhile.
    bool hold(int signal);
    // A step the debugger asked for while the core was held inside an event wait.
    bool take_pending_step();
    // The running core (nullptr when it goes away at a reset): breakpoints and the
    // attached debugger's exact-PC wish carry over to it.
    void bind(HeldCore* core);

private:
    class Proxy : public DebugTarget {
    public:
        explicit Proxy(CoreDebug& d) : d_(d) {}
        Registers registers() override;
        bool write_register(unsigned index, std::uint32_t value) override;
        bool read_memory(std::uint32_t address, std::span<std::uint8_t> out) override;
        bool write_memory(std::uint32_t address, std::span<const std::uint8_t> data) override;
        void set_breakpoint(std::uint32_t address, bool present) override;
        int stop_signal() override { return d_.signal_.load(); }

    private:
        CoreDebug& d_;
    };
    enum class Release { none, cont, step };

    // Runs `task` on the core's thread and waits for it.
    void on_core(std::function<void(HeldCore&)> task);
    void notify();

    CoreClock& clock_;
    Proxy proxy_{*this};
    int wake_fd_ = -1;
    std::atomic<bool> halt_requested_{false};
    std::atomic<bool> halted_{false};
    std::atomic<int> signal_{kSigTrap};
    std::atomic<bool> abandoned_{false};
    // The core's thread only (posted tasks included):
    HeldCore* core_ = nullptr;
    std::set<std::uint32_t> breakpoints_;
    bool attached_ = false;
    bool wait_at_power_on_;
    bool in_hold_ = false;
    bool pending_step_ = false;
    Release release_ = Release::none;
};

}  // namespace jal::emu::gdb
