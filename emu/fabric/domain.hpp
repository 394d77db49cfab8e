// One emulator process's membership of a fabric domain: the processes a topology file names
// join over libfabric, exchange their chips' HBM registrations (address, key, size) and from
// then on reach every remote chip's memory by RMA.
//
// A progress thread owns the endpoint: it keeps receive buffers posted, sends the join
// handshake and heartbeats, moves transfers in chunks through registered staging buffers,
// and fails whatever waits on a peer that is gone. Callers on any thread make blocking
// read()/write() calls; each ends, at the latest after the operation timeout, with the
// bytes moved or a DomainError that says why (not joined, peer left or died, timeout).
// docs/fabric.md, "A domain of jal-emu processes".
#pragma once

#include "emu/fabric/fabric_endpoint.hpp"
#include "emu/fabric/topology.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace jal::emu::fabric {

class DomainError : public std::runtime_error {
public:
    explicit DomainError(const std::string& what, bool peer_lost = false)
        : std::runtime_error(what), peer_lost_(peer_lost)
    {}
    // The chip's process is gone (left, died, stopped answering), not a refused request.
    bool peer_lost() const { return peer_lost_; }

private:
    bool peer_lost_;
};

struct DomainOptions {
    std::string process;                            // this process's name in the topology
    std::chrono::milliseconds join_timeout{30000};  // every peer must have answered by then
    std::chrono::milliseconds op_timeout{10000};    // a transfer; a peer silent this long is dead
};

// Memory of a local chip that peers may read and write (the chip's HBM).
struct LocalChipMemory {
    void* base = nullptr;
    std::uint64_t size = 0;
};

enum class DomainState { joining, joined, failed };
enum class PeerState { joining, joined, left, dead };

struct PeerStatus {
    std::string name, address;
    PeerState state = PeerState::joining;
    std::string error;  // why it is dead
    std::vector<unsigned> chips;
};

struct DomainStatus {
    DomainState state = DomainState::joining;
    std::string error;  // why the join failed
    std::string provider, process;
    std::vector<PeerStatus> peers;
};

const char* state_name(DomainState s);
const char* state_name(PeerState s);

class Domain {
public:
    // Opens the endpoint where the topology says this process listens and registers the
    // chips' memory (one entry per chip the process holds, in the topology's order). Throws
    // DomainError or FabricError (a bad name, an address in use, no such provider).
    Domain(Topology topology, const DomainOptions& options, std::vector<LocalChipMemory> chips);
    ~Domain();  // tells the peers this process leaves, then stops
    Domain(const Domain&) = delete;
    Domain& operator=(const Domain&) = delete;

    const Topology& topology() const { return topology_; }
    const TopologyProcess& self() const { return topology_.processes[self_]; }
    bool holds(unsigned chip) const;  // a chip of this process
    // A chip of this process or of a joined peer: one a link to it can train with.
    bool reachable(unsigned chip) const;
    DomainStatus status() const;
    // Waits until joined or failed (or `timeout`); returns the state then.
    DomainState wait_joined(std::chrono::milliseconds timeout) const;

    // RMA on a remote chip's memory at `offset`: blocking, any thread.
    void write(unsigned chip, std::uint64_t offset, const void* data, std::size_t size);
    void read(unsigned chip, std::uint64_t offset, void* data, std::size_t size);

    struct Request;  // domain.cpp
    struct Peer;
    struct Op;

private:
    void transfer(bool write, unsigned chip, std::uint64_t offset, std::byte* data,
                  std::size_t size);
    void run();
    bool step();
    bool collect();
    void complete(Op* op, const Completion& c);
    void complete_chunk(Op* op, const Completion& c);
    void on_message(Op* op, std::size_t length);
    bool send_hello(Peer& p, bool now);
    bool send_control(Peer& p, std::uint16_t type);
    bool join_step();
    bool heartbeat_step();
    bool start_requests();
    bool issue_chunks(Request& r);
    bool in_local_memory(const std::byte* p, std::size_t size) const;
    void idle();
    void drive();
    void check_deadlines();
    void peer_lost(Peer& p, PeerState state, const std::string& why);
    void finish(Request& r, const std::string& error);
    void leave();

    Topology topology_;
    DomainOptions options_;
    std::size_t self_ = 0;
    std::unique_ptr<FabricEndpoint> ep_;
    std::vector<LocalChipMemory> local_memory_;  // per chip of this process
    std::vector<RemoteRegion> local_regions_;    // the same, as peers name it
    std::vector<std::unique_ptr<Peer>> peers_;   // index: the topology's process index
    std::vector<std::byte> message_buffers_, staging_;
    std::vector<std::unique_ptr<Op>> receive_ops_, send_ops_, chunk_ops_;
    std::vector<Op*> free_sends_, free_chunks_;
    std::deque<Request*> queue_;    // submitted, not yet started (under mutex_)
    std::vector<Request*> active_;  // started (progress thread only)
    std::chrono::steady_clock::time_point join_deadline_;

    mutable std::mutex mutex_;
    mutable std::condition_variable changed_;
    std::condition_variable wake_;  // a request was queued, or the domain stops
    std::mutex drive_mutex_;        // held by whoever drives the endpoint (steps)
    std::chrono::steady_clock::time_point
        hot_until_{};  // read the queue without sleeping until then
    DomainState state_ = DomainState::joining;
    std::string error_;
    bool stopping_ = false;
    bool broken_ = false;  // the progress thread has ended on an error
    std::thread thread_;
};

}  // namespace jal::emu::fabric
