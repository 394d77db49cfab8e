// The debug fault injector behind the management core's FAULT registers (jal/hw/mgmt.h):
// the firmware names a fault and its arguments and the chip's models take it at once (a
// slice that fails or hangs its next dispatch, a dead HBM lane, ECC errors and a poisoned
// page, a new inlet temperature or load). The bring-up console cannot apply faults itself:
// it queues requests the firmware picks up on JAL_EV_FAULT, so the firmware injects, logs
// and recovers from every fault the same way whoever asked for it.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>

namespace jal::emu {

class Chip;

class FaultInjector {
public:
    explicit FaultInjector(Chip& chip) : chip_(chip) {}

    // Register access at an offset inside the FAULT block (management-core thread).
    std::uint32_t read(std::uint32_t offset);
    void write(std::uint32_t offset, std::uint32_t value);

    struct Request {
        std::uint32_t kind = 0;
        std::array<std::uint32_t, 3> args{};
    };
    // The console's request for the firmware to inject (any thread): raises JAL_EV_FAULT.
    void queue(const Request& r);
    std::size_t pending() const;

    // Applies a fault to the models; returns a jal_status. Kinds the firmware acts out on
    // its own (HANG_MAIN_LOOP, CRASH) need nothing here.
    std::uint32_t apply(const Request& r);

private:
    Chip& chip_;
    Request staged_;
    std::uint32_t status_ = 0;
    mutable std::mutex m_;
    std::deque<Request> requests_;
};

}  // namespace jal::emu
