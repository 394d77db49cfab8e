// A connected AF_UNIX SOCK_SEQPACKET socket: one message per packet, an optional file
// descriptor passed along with SCM_RIGHTS, every wait bounded.
#pragma once

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "../../util/unique_fd.hpp"

namespace jal::direct {

class SeqpacketSocket {
public:
    // Throws jal::Error: NO_DEVICE when nothing listens at `path`, TIMEOUT when the
    // listener does not take the connection within `timeout`, IO_ERROR otherwise.
    static SeqpacketSocket connect(const std::string& path,
                                   std::chrono::milliseconds timeout = std::chrono::seconds(5));

    explicit SeqpacketSocket(util::UniqueFd fd) : fd_(std::move(fd)) {}

    // Sends one packet, with `pass_fd` attached when it is >= 0.
    void send(std::span<const std::byte> packet, int pass_fd, std::chrono::milliseconds timeout);

    // Receives one packet into `buffer`; returns its size. Throws TIMEOUT when nothing
    // arrives in time and NO_DEVICE when the peer has gone.
    // Descriptors that came with the packet are closed, or handed to `fds` when given.
    size_t receive(std::span<std::byte> buffer, std::chrono::milliseconds timeout,
                   std::vector<util::UniqueFd>* fds = nullptr);

    int fd() const { return fd_.get(); }

private:
    util::UniqueFd fd_;
};

}  // namespace jal::direct
