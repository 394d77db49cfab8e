#include "transport/socket_server.hpp"

#include "chip/chip.hpp"
#include "transport/connection.hpp"
#include "util/log.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace jalemu {

namespace {
[[noreturn]] void fail(const std::string& what)
{
    throw std::runtime_error(what + ": " + std::strerror(errno));
}
}  // namespace

SocketServer::SocketServer(Chip& chip, std::string socket_path) : chip_(chip), path_(std::move(socket_path))
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long: " + path_);
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    listen_fd_ = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) fail("socket");
    unlink(path_.c_str());  // a stale socket from an emulator that was killed
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const int e = errno;
        close(listen_fd_);
        errno = e;
        fail("cannot bind " + path_);
    }
    if (listen(listen_fd_, 16) != 0) fail("listen on " + path_);
    stop_fd_ = eventfd(0, EFD_CLOEXEC);
    if (stop_fd_ < 0) fail("eventfd");
}

SocketServer::~SocketServer()
{
    stop();
    if (listen_fd_ >= 0) close(listen_fd_);
    if (stop_fd_ >= 0) close(stop_fd_);
}

void SocketServer::start()
{
    accept_thread_ = std::thread([this] { accept_loop(); });
}

void SocketServer::reap_finished_locked()
{
    for (auto it = connections_.begin(); it != connections_.end();) {
        if (it->done) {
            it->thread.join();
            close(it->fd);
            it = connections_.erase(it);
        } else {
            ++it;
        }
    }
}

void SocketServer::accept_loop()
{
    for (;;) {
        pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            log(LogLevel::error, "chip{}: poll on {} failed: {}", chip_.index(), path_, std::strerror(errno));
            return;
        }
        if (fds[1].revents) return;
        if (!(fds[0].revents & POLLIN)) continue;
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        std::lock_guard lock(mutex_);
        reap_finished_locked();
        if (stopping_) {
            close(fd);
            return;
        }
        auto& c = connections_.emplace_back();
        c.fd = fd;
        c.thread = std::thread([this, &c] {
            serve_connection(chip_, c.fd);
            std::lock_guard l(mutex_);
            c.done = true;
        });
    }
}

void SocketServer::stop()
{
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        stopping_ = true;
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(stop_fd_, &one, sizeof one);
    if (accept_thread_.joinable()) accept_thread_.join();
    {
        std::lock_guard lock(mutex_);
        for (auto& c : connections_) shutdown(c.fd, SHUT_RDWR);
    }
    for (auto& c : connections_) {
        if (c.thread.joinable()) c.thread.join();
        close(c.fd);
    }
    connections_.clear();
    unlink(path_.c_str());
}

}  // namespace jalemu
