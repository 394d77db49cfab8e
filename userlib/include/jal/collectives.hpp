// collectives.hpp: collectives executed by the chips, over a communicator of devices, as
// NCCL and RCCL users know them (docs/multichip.md, "Collectives").
//
//   std::vector<jal::collectives::Rank> ranks;           // one (device, context, queue) a chip
//   jal::collectives::Communicator comm(ranks);
//   for (uint32_t r = 0; r < comm.size(); ++r)           // every rank, the same calls in order
//       comm.all_reduce(r, send[r].va(), recv[r].va(), n, JAL_DT_F32, done[r].get());
//
// Each call enqueues rank r's part on r's queue and returns (stream order: it runs after
// what the queue holds, and what is queued after it runs after it). The chips do the work:
// COPY packets move data into the peers' staging memory over the fabric (peer memory), a
// WRITE_VALUE sets a flag word in each peer, a WAIT_VALUE holds the queue until every
// peer's flag for the step has arrived, and a reduction kernel (build_reduce_sum) sums
// what arrived on the slices of Options::slice_mask. No host thread takes part.
//
// Threads: calls for different ranks may come from different threads (each rank's state
// is its own, as with one NCCL communicator a GPU); one rank's calls, one thread at a time.
//
// Failures: every packet of a collective after its first is chained (JAL_PACKET_F_CHAIN),
// so `done` completes with the status of the first failure on that rank: LINK_DOWN when a
// peer cannot be reached, TIMEOUT when a peer's flag did not arrive within
// Options::timeout (a peer that died, or that failed itself). After a failed collective the
// communicator is unusable (its ranks disagree on how far they got), as with NCCL: destroy
// it and create another over the chips that are left.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include <jal/api.h>
#include <jal/hw/isa.h>
#include <jal/jal.hpp>

namespace jal::collectives {

// One chip of the communicator: its device, the context whose memory the collectives'
// buffers are in, and the queue they are enqueued on. The objects must outlive the
// communicator.
struct Rank {
    Rank(jal_device_t d, jal_context_t c, jal_queue_t q) : device(d), context(c), queue(q) {}
    Rank(const jal::runtime::Device& d, const jal::runtime::Context& c,
         const jal::runtime::Queue& q)
        : Rank(d.get(), c.get(), q.get())
    {}
    jal_device_t device = nullptr;
    jal_context_t context = nullptr;
    jal_queue_t queue = nullptr;
};

struct Options {
    // Staging memory a rank keeps for each peer, twice (steps alternate between the two):
    // messages larger than this go in pieces. Rounded up to 64 KiB; at most 256 MiB.
    uint64_t staging_bytes = 1ull << 20;
    // How long a rank waits for a peer's step before failing with TIMEOUT.
    std::chrono::microseconds timeout = std::chrono::seconds(60);
    // Logical slices that run the reduction kernel (and hold the staging memory); 0: the
    // first 8 usable slices.
    uint64_t slice_mask = 0;
};

class JAL_API Communicator {
public:
    // Allocates and exports each rank's staging memory and maps every peer's in each
    // rank's context (so every chip must reach every other over the fabric: a tray, or a
    // domain of jal-emu processes). Waits for the setup; throws jal::Error on failure.
    explicit Communicator(std::vector<Rank> ranks, const Options& options = {});
    ~Communicator();
    Communicator(const Communicator&) = delete;
    Communicator& operator=(const Communicator&) = delete;

    uint32_t size() const;

    // Buffers are device addresses in rank r's context; counts are elements of `dtype`
    // (F32, BF16, F16; the gathers also I32). `done` (may be null; Signal::get() of a
    // wrapper) completes once when rank r's part is over, with its status. send and recv
    // must not overlap.
    //
    // recv = the sum over ranks of send (count elements each). Reduction order: element
    // e is summed on one rank, in rank order, in F32, rounded once to dtype at the end.
    void all_reduce(uint32_t rank, uint64_t send, uint64_t recv, uint64_t count, jal_dtype dtype,
                    jal_signal_t done = nullptr);
    // recv (recv_count) = the sum over ranks of block `rank` of send (size()·recv_count).
    void reduce_scatter(uint32_t rank, uint64_t send, uint64_t recv, uint64_t recv_count,
                        jal_dtype dtype, jal_signal_t done = nullptr);
    // recv (size()·send_count) = every rank's send (send_count), in rank order.
    void all_gather(uint32_t rank, uint64_t send, uint64_t recv, uint64_t send_count,
                    jal_dtype dtype, jal_signal_t done = nullptr);
    // Block j of rank r's send (count elements) becomes block r of rank j's recv: the
    // exchange of MoE dispatch and combine.
    void all_to_all(uint32_t rank, uint64_t send, uint64_t recv, uint64_t count, jal_dtype dtype,
                    jal_signal_t done = nullptr);

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace jal::collectives
