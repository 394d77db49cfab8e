// One client connection: decodes protocol messages, applies them to the chip as one host
// function, replies. Malformed messages get a PROTOCOL reply; the connection goes on.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace jal::emu {

class Chip;

// What a chip's socket allows a connection before and after HELLO (docs/security.md).
struct SessionPolicy {
    // A connection that has not sent HELLO within this time is closed.
    std::chrono::milliseconds hello_timeout{5000};
    // Connections that have not said HELLO yet, per chip; more are closed at once.
    unsigned max_pending = 16;
};

// Serves fd until the peer closes it or it is shut down; detaches the function at the end
// and shuts the socket down, so the peer sees the end at once. `pending` counts the
// chip's connections still waiting for HELLO (shared by all of them).
void serve_connection(Chip& chip, int fd, const SessionPolicy& policy,
                      std::atomic<unsigned>& pending);
// The same with the default policy and a counter of its own (tests).
void serve_connection(Chip& chip, int fd);

// The client name as it may appear in the log: printable ASCII, anything else as \xNN.
std::string printable_client_name(const char* name, std::size_t max_len);

}  // namespace jal::emu
