// A bare transport-protocol client for the security tests: it sends whatever the test
// asks, including what libjal never would (bad flags, foreign descriptors, nothing at all).
#pragma once

#include <jal/emu/protocol.h>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace jal::test {

struct RawReply {
    jal_msg_reply reply{};
    std::vector<int> fds;  // owned by the caller
};

class RawClient {
public:
    // Connects (blocking) to a chip's socket; throws std::runtime_error on failure.
    explicit RawClient(const std::string& socket_path);
    ~RawClient();
    RawClient(const RawClient&) = delete;
    RawClient& operator=(const RawClient&) = delete;

    int fd() const { return fd_; }
    // Sends one packet with an optional descriptor; false if the send failed.
    bool send(const void* data, std::size_t len, int pass_fd = -1);
    // The next reply, or nullopt when the connection ended or nothing came in `timeout`.
    std::optional<RawReply> receive(std::chrono::milliseconds timeout = std::chrono::seconds(30));
    // True once the emulator has closed the connection (EOF), within `timeout`.
    bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::seconds(30));

    // HELLO with the given name and flags; the reply status (or -1: no reply).
    long hello(const std::string& name = "security-test", std::uint32_t flags = 0,
               std::uint32_t version = JAL_PROTO_VERSION);
    // A request that carries one descriptor; the reply status (or -1).
    long request(const void* msg, std::size_t len, int pass_fd = -1);

private:
    int fd_ = -1;
    std::uint64_t next_id_ = 1;
};

}  // namespace jal::test
