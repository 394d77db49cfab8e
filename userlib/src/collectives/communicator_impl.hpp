// The communicator's state and the steps every collective is made of (communicator.cpp):
// an exchange (data into the peers' staging memory, a flag word in each peer, a wait for
// every peer's flag), a reduction kernel, local copies. collective_ops.cpp composes them.
#pragma once

#include <jal/collectives.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <tuple>
#include <vector>

#include "../runtime/c_api_support.hpp"

namespace jal::collectives {

// What a rank sends one peer in an exchange: `bytes` at local device address `src`.
struct JAL_HIDDEN Outgoing {
    uint64_t src = 0;
    uint64_t bytes = 0;
};

// Packets of one collective on one rank: every packet after the first is chained
// (JAL_PACKET_F_CHAIN), so a failure passes down to the collective's last packet.
class JAL_HIDDEN Chain {
public:
    uint8_t next()
    {
        const uint8_t f = started_ ? uint8_t{JAL_PACKET_F_CHAIN} : uint8_t{0};
        started_ = true;
        return f;
    }

private:
    bool started_ = false;
};

struct JAL_HIDDEN Communicator::Impl {
    // A rank's window, the memory its peers write: the flag words (one a peer) in the first
    // page, then two staging buffers of one slot a peer each (steps alternate between them,
    // so a peer one step ahead never overwrites a slot still being read).
    static constexpr uint64_t kFlagBytes = 4096;
    // The reduction's arguments (inputs table address, out) then its inputs table.
    static constexpr uint64_t kScratchBytes = 16 + kFlagBytes;

    // Device memory the communicator holds (its own, or a peer's mapped).
    struct Mem {
        runtime::Handle<jal_mem_t, jal_mem_free> h;
        uint64_t va = 0;
    };

    struct RankState {
        explicit RankState(const Rank& r) : rank(r) {}
        Rank rank;
        // The rank's queue inside libjal: its packets can carry JAL_PACKET_F_CHAIN.
        runtime::detail::UserQueue& queue() const { return *rank.queue->queue; }
        uint64_t slice_mask = 0;
        Mem window, scratch;
        std::vector<Mem> peers;  // peers[j]: rank j's window in this rank's context
        // Loads programs without queueing behind the collectives' waits.
        runtime::Handle<jal_queue_t, jal_queue_destroy> upload;
        std::map<std::tuple<uint32_t, uint32_t, int>, Mem> programs;  // reduction kernels
        uint64_t step = 0;
    };

    Options options;
    uint64_t slot_bytes = 0;  // staging a peer, in each of the two buffers
    std::vector<RankState> ranks;

    uint32_t size() const { return static_cast<uint32_t>(ranks.size()); }
    RankState& at(uint32_t rank);
    uint64_t window_bytes() const { return kFlagBytes + 2 * size() * slot_bytes; }

    // The next step of rank r: out[j] goes into peer j's slot r of the step's staging
    // buffer, then r's flag in every peer is set to the step's number, then r's queue waits
    // for every peer's flag. Returns the local address of the step's staging buffer: slot
    // j holds what peer j sent.
    uint64_t exchange(uint32_t r, std::span<const Outgoing> out, Chain& chain);
    // out = sum of inputs (addresses in rank r's context), `length` elements of dtype.
    void reduce(uint32_t r, std::span<const uint64_t> inputs, uint64_t out, uint32_t length,
                jal_dtype dtype, Chain& chain);
    void copy(uint32_t r, uint64_t dst, uint64_t src, uint64_t bytes, Chain& chain);
    // All-gather (send_stride 0) and all-to-all (send_stride = count), collective_ops.cpp.
    void blocks(uint32_t rank, uint64_t send, uint64_t send_stride, uint64_t recv, uint64_t count,
                jal_dtype dtype, jal_signal_t done);
    // The collective's last packet: completes `done` with the chain's status.
    void finish(uint32_t r, jal_signal_t done, Chain& chain);

private:
    uint64_t program(RankState& s, uint32_t inputs, uint32_t length, jal_dtype dtype);
};

JAL_HIDDEN uint32_t element_bytes(jal_dtype dtype);

}  // namespace jal::collectives
