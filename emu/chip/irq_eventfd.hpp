// An MSI-X vector's binding: the eventfd a client passed with SET_IRQ. The emulator signals
// it from firmware and queue-engine threads, so the write must never block: a client can
// hold the counter at its maximum (a write would then wait for a read that never comes),
// and it shares the file description, so it can clear O_NONBLOCK at any time.
#pragma once

namespace jal::emu {

class IrqEventfd {
public:
    explicit IrqEventfd(int fd) : fd_(fd) {}  // takes ownership; see accept()
    ~IrqEventfd();
    IrqEventfd(const IrqEventfd&) = delete;
    IrqEventfd& operator=(const IrqEventfd&) = delete;

    // True if fd is an eventfd (any other descriptor is refused: a pipe or socket can
    // block a writer, /dev/null would hide every interrupt). Sets O_NONBLOCK on it.
    static bool accept(int fd);

    // Adds 1 to the counter without blocking. A counter that cannot take it (the client
    // never reads it) counts as "interrupt already pending". Never waits longer than a
    // few milliseconds, even if the client cleared O_NONBLOCK (the write is interrupted).
    void signal() const;

private:
    int fd_;
};

}  // namespace jal::emu
