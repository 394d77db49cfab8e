// A client of jal-emu's bring-up console (DIR/jalN.console): one command line out, one JSON
// line back. Tests use it to read the emulator's hidden truth (the PHY's real eyes), which
// the firmware never sees.
#pragma once

#include <chrono>
#include <string>

#include <nlohmann/json.hpp>

namespace fwtest {

class ConsoleClient {
public:
    // Connects to `path`, retrying until `timeout` (the socket appears with the chip).
    explicit ConsoleClient(const std::string& path,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10));
    ~ConsoleClient();
    ConsoleClient(const ConsoleClient&) = delete;
    ConsoleClient& operator=(const ConsoleClient&) = delete;

    // Sends `command` and returns the parsed reply; throws std::runtime_error on a closed
    // connection or after `timeout`.
    nlohmann::json ask(const std::string& command,
                       std::chrono::milliseconds timeout = std::chrono::seconds(10));

private:
    int fd_ = -1;
    std::string buffered_;
};

}  // namespace fwtest
