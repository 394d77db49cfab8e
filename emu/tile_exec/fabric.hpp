// What the slices of one dispatch share: the collective network's point-to-point FIFOs,
// the barrier, and the stop rule. Implemented by the dispatch (dispatch.cpp), which is
// also the scheduler; the executor only calls it.
#pragma once

#include "emu/tile_exec/slice_state.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace jal::emu::exec {

// A tile in flight on the collective network: its shape and packed rows (no data in
// timing-only mode), and when it arrives (modelled).
struct Message {
    std::uint32_t rows = 0, cols = 0, dtype = 0;
    std::vector<std::byte> data;
    double arrival = 0;
};

class SliceFabric {
public:
    virtual ~SliceFabric() = default;
    // Appends to the FIFO from `from` to `to` (wakes `to` if it waits on it).
    virtual void send(std::uint32_t from, std::uint32_t to, Message&& m) = 0;
    // Pops the next message of the FIFO from `from` to `to`; false if it is empty.
    virtual bool receive(std::uint32_t to, std::uint32_t from, Message& out) = 0;
    // Arrives at (or, resumed, checks) the current barrier of the dispatch slices in
    // `group` (0: all of them): true when every one has arrived, with the modelled time
    // they leave it.
    virtual bool barrier(SliceState& s, std::uint64_t group, double& release) = 0;
    // The slice must stop: the dispatch was aborted, or another slice faulted at an
    // earlier modelled time than `now` (so no later fault can be the first). Asked before
    // every instruction, so it is inline: relaxed loads, no call.
    bool should_stop(double now) const
    {
        return now > stop_time_.load(std::memory_order_relaxed) ||
               (abort_ && abort_->load(std::memory_order_relaxed));
    }
    virtual std::uint32_t slices() const = 0;

protected:
    explicit SliceFabric(const std::atomic<bool>* abort) : abort_(abort) {}
    // The earliest modelled time a slice faulted at (infinity: none yet).
    std::atomic<double> stop_time_{std::numeric_limits<double>::infinity()};
    const std::atomic<bool>* abort_;
};

}  // namespace jal::emu::exec
