#include "emu/transport/unix_listener.hpp"

#include "emu/util/log.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace jal::emu {

UnixListener::UnixListener(std::string path, int type, std::function<void(int)> serve)
    : path_(std::move(path)), serve_(std::move(serve))
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.size() >= sizeof addr.sun_path)
        throw std::runtime_error("socket path too long: " + path_);
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    listen_fd_ = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    unlink(path_.c_str());  // a stale socket from an emulator that was killed
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listen_fd_, 16) != 0) {
        const std::string why = std::strerror(errno);
        close(listen_fd_);
        throw std::runtime_error("cannot listen on " + path_ + ": " + why);
    }
    stop_fd_ = eventfd(0, EFD_CLOEXEC);
    if (stop_fd_ < 0) {
        close(listen_fd_);
        throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
    }
}

UnixListener::~UnixListener()
{
    stop();
    close(listen_fd_);
    close(stop_fd_);
}

void UnixListener::start()
{
    accept_thread_ = std::thread([this] { accept_loop(); });
}

void UnixListener::reap_finished_locked()
{
    for (auto it = clients_.begin(); it != clients_.end();) {
        if (!it->done) {
            ++it;
            continue;
        }
        it->thread.join();
        close(it->fd);
        it = clients_.erase(it);
    }
}

void UnixListener::accept_loop()
{
    for (;;) {
        pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            log(LogLevel::error, "poll on {} failed: {}", path_, std::strerror(errno));
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
        Client& c = clients_.emplace_back();
        c.fd = fd;
        c.thread = std::thread([this, &c] {
            serve_(c.fd);
            std::lock_guard l(mutex_);
            c.done = true;
        });
    }
}

void UnixListener::stop()
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
        for (auto& c : clients_) shutdown(c.fd, SHUT_RDWR);
    }
    for (auto& c : clients_) {
        if (c.thread.joinable()) c.thread.join();
        close(c.fd);
    }
    clients_.clear();
    unlink(path_.c_str());
}

}  // namespace jal::emu
