#include "emu/transport/unix_listener.hpp"

#include "emu/util/log.hpp"

#include <jal/emu/socket_trust.hpp>

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace jal::emu {

namespace {
std::vector<std::uint32_t>& extra_uids()
{
    static std::vector<std::uint32_t> uids;
    return uids;
}
}  // namespace

void UnixListener::allow_peer_uids(std::vector<std::uint32_t> uids)
{
    extra_uids() = std::move(uids);
}

bool UnixListener::peer_allowed(int fd) const
{
    uid_t uid;
    if (!socket_peer_uid(fd, uid)) return false;
    if (trusted_peer_uid(uid)) return true;
    if (access_ == Access::owner) {
        log(LogLevel::warn, "{}: connection from uid {} refused (owner and root only)", path_, uid);
        return false;
    }
    for (auto allowed : extra_uids())
        if (allowed == uid) return true;
    log(LogLevel::warn, "{}: connection from uid {} refused (see --allow-uid)", path_, uid);
    return false;
}

UnixListener::UnixListener(std::string path, int type, std::function<void(int)> serve,
                           std::size_t max_clients, Access access)
    : path_(std::move(path)), serve_(std::move(serve)), max_clients_(max_clients), access_(access)
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.size() >= sizeof addr.sun_path)
        throw std::runtime_error("socket path too long: " + path_);
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    listen_fd_ = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    unlink(path_.c_str());  // a stale socket from an emulator that was killed
    // Owner only, unless other uids are allowed (the directory still keeps strangers out;
    // each peer's uid is checked on accept).
    const mode_t mode = extra_uids().empty() || access_ == Access::owner ? 0600 : 0666;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        chmod(path_.c_str(), mode) != 0 || listen(listen_fd_, 16) != 0) {
        const std::string why = std::strerror(errno);
        close(listen_fd_);
        throw std::runtime_error("cannot listen on " + path_ + ": " + why);
    }
    stop_fd_ = eventfd(0, EFD_CLOEXEC);
    done_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0 || done_fd_ < 0) {
        if (stop_fd_ >= 0) close(stop_fd_);
        close(listen_fd_);
        throw std::runtime_error(std::string("eventfd: ") + std::strerror(errno));
    }
}

UnixListener::~UnixListener()
{
    stop();
    close(listen_fd_);
    close(stop_fd_);
    close(done_fd_);
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
    bool backing_off = false;
    for (;;) {
        // Out of descriptors, the listening socket stays readable: leave it out of the poll
        // for a while (finished clients are still reaped) instead of spinning on it.
        pollfd fds[3] = {{stop_fd_, POLLIN, 0}, {done_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}};
        const int n = poll(fds, backing_off ? 2 : 3, backing_off ? 100 : -1);
        if (n < 0) {
            if (errno == EINTR) continue;
            log(LogLevel::error, "poll on {} failed: {}", path_, std::strerror(errno));
            return;
        }
        if (fds[0].revents) return;
        if (fds[1].revents) {
            std::uint64_t count;
            [[maybe_unused]] ssize_t r = read(done_fd_, &count, sizeof count);
            std::lock_guard lock(mutex_);
            reap_finished_locked();
        }
        if (backing_off) {
            backing_off = false;
            continue;
        }
        if (fds[2].revents & POLLIN) backing_off = !accept_one();
    }
}

bool UnixListener::accept_one()
{
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
        if (errno != EMFILE && errno != ENFILE && errno != ENOBUFS && errno != ENOMEM)
            return true;  // the connection went away, or a signal: nothing to wait for
        if (!starved_)    // once per episode, not every retry
            log(LogLevel::warn, "{}: cannot accept connections: {}", path_, std::strerror(errno));
        starved_ = true;
        return false;
    }
    starved_ = false;
    if (!peer_allowed(fd)) {
        close(fd);
        return true;
    }
    std::lock_guard lock(mutex_);
    reap_finished_locked();
    if (stopping_ || clients_.size() >= max_clients_) {
        if (!stopping_)
            log(LogLevel::warn, "{}: {} clients already; connection refused", path_,
                clients_.size());
        close(fd);
        return true;
    }
    Client& c = clients_.emplace_back();
    c.fd = fd;
    c.thread = std::thread([this, &c] {
        serve_(c.fd);
        std::lock_guard l(mutex_);
        c.done = true;
        const std::uint64_t one = 1;
        [[maybe_unused]] ssize_t n = write(done_fd_, &one, sizeof one);
    });
    return true;
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
