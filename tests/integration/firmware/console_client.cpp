#include "console_client.hpp"

#include <cerrno>
#include <cstring>
#include <poll.h>
#include <stdexcept>
#include <sys/socket.h>
#include <sys/un.h>
#include <thread>
#include <unistd.h>

namespace fwtest {

ConsoleClient::ConsoleClient(const std::string& path, std::chrono::milliseconds timeout)
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path)
        throw std::runtime_error("console path too long: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
        if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) return;
        const int err = errno;
        ::close(fd_);
        fd_ = -1;
        if (std::chrono::steady_clock::now() > deadline)
            throw std::runtime_error("cannot connect to " + path + ": " + std::strerror(err));
        std::this_thread::yield();
    }
}

ConsoleClient::~ConsoleClient()
{
    if (fd_ >= 0) ::close(fd_);
}

nlohmann::json ConsoleClient::ask(const std::string& command, std::chrono::milliseconds timeout)
{
    const std::string line = command + "\n";
    if (::send(fd_, line.data(), line.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(line.size()))
        throw std::runtime_error("console: send failed: " + std::string(std::strerror(errno)));
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (const auto nl = buffered_.find('\n'); nl != std::string::npos) {
            const std::string reply = buffered_.substr(0, nl);
            buffered_.erase(0, nl + 1);
            return nlohmann::json::parse(reply);
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) throw std::runtime_error("console: no reply to '" + command + "'");
        pollfd p{fd_, POLLIN, 0};
        if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
        char chunk[65536];
        const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
        if (n <= 0) throw std::runtime_error("console: connection closed");
        buffered_.append(chunk, static_cast<std::size_t>(n));
    }
}

}  // namespace fwtest
