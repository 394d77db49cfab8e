// The domain's private pieces shared by domain.cpp (joining, peers) and
// domain_transfer.cpp (RMA in chunks): the control messages on the wire and the progress
// thread's bookkeeping.
#pragma once

#include "emu/fabric/domain.hpp"

#include <chrono>
#include <cstdint>

namespace jal::emu::fabric {

using Clock = std::chrono::steady_clock;

// Control messages: a header and, in HELLO and HELLO_REPLY, the sender's chips' regions.
// Both ends are the same program, so the layout is the host's; the magic and a version
// refuse anything else.
inline constexpr std::uint32_t kWireMagic = 0x4a414c46;  // "JALF"
inline constexpr std::uint16_t kWireVersion = 1;
enum WireType : std::uint16_t {
    kHello = 1,       // my regions; answer with yours
    kHelloReply = 2,  // my regions, in answer to yours: I have them
    kPing = 3,        // still here
    kBye = 4,         // leaving the domain
    kWake = 5,        // transfers into your memory are coming: keep your provider progressing
};
struct WireHeader {
    std::uint32_t magic;
    std::uint16_t version, type;
    std::uint32_t from;   // the sender's process index in the topology
    std::uint32_t count;  // regions that follow
};
struct WireRegion {
    std::uint64_t chip, addr, key, size;
};

inline constexpr std::size_t kMessageBytes = 4096;
inline constexpr std::size_t kReceives = 32, kSends = 32;
inline constexpr std::size_t kChunkBytes = 1u << 20, kChunks = 16;  // RMA staging
// Chunks straight from or to a local chip's memory need no staging. They are the staging
// chunks' size: on tcp (RxM's rendezvous for large messages) 1 MiB chunks, 16 in flight,
// moved 64 MiB at 1.0-1.4x raw libfabric's pipelined rate where 2 MiB gave 0.86-0.97x and
// 4 MiB 0.83-0.85x (jal-bench fabric, idle machine, docs/fabric.md).
inline constexpr std::size_t kDirectChunkBytes = 1u << 20;
inline constexpr auto kHelloInterval = std::chrono::milliseconds(100);
inline constexpr auto kPingInterval = std::chrono::milliseconds(250);
// A provider without automatic progress moves a peer's RMA into this process only while
// the completion queue is read, and RMA brings the target no completion: so the initiator
// says WAKE (every kWakeInterval while it transfers) and the target then reads its
// queue without sleeping for kHotWindow. An idle domain sleeps kIdleSleep between reads.
inline constexpr auto kWakeInterval = std::chrono::milliseconds(10);
inline constexpr auto kHotWindow = std::chrono::milliseconds(50);
inline constexpr auto kIdleSleep = std::chrono::microseconds(200);
inline constexpr auto kAwakeWait = std::chrono::microseconds(500);  // a caller's, see transfer()

struct Domain::Peer {
    std::size_t index = 0;   // in the topology's processes
    std::uint64_t addr = 0;  // the endpoint's handle
    PeerState state = PeerState::joining;
    std::string error;
    bool have_theirs = false, they_have_ours = false;
    std::vector<std::pair<unsigned, RemoteRegion>> regions;  // (domain chip id, region)
    bool hello_in_flight = false, ping_in_flight = false;
    Clock::time_point next_hello{}, next_ping{}, last_heard{}, last_wake{};
};

struct Domain::Request {
    bool write = false;
    unsigned chip = 0;
    Peer* peer = nullptr;
    RemoteRegion region;
    std::uint64_t offset = 0;
    std::byte* data = nullptr;
    std::size_t size = 0, issued = 0, done = 0;
    Clock::time_point deadline{};
    bool direct = false;  // the caller's buffer is a local chip's registered memory: no staging
    bool finished = false;
    std::string error;
};

struct Domain::Op {
    enum Kind { receive, send, chunk } kind = receive;
    std::byte* buffer = nullptr;
    Peer* peer = nullptr;            // send, chunk
    std::uint16_t type = 0;          // send: the message's WireType
    Request* request = nullptr;      // chunk; null once its request has ended
    std::size_t at = 0, length = 0;  // chunk: the request's bytes it moves
};

}  // namespace jal::emu::fabric
