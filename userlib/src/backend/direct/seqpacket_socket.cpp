#include "seqpacket_socket.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <jal/emu/socket_trust.hpp>
#include <jal/error.hpp>

#include "../../util/deadline.hpp"

namespace jal::direct {

namespace {

std::string errno_text(int err)
{
    return std::strerror(err);
}

// Waits for `events` on fd, retrying on EINTR; false on timeout.
bool wait_for(int fd, short events, std::chrono::milliseconds timeout)
{
    util::Deadline deadline(timeout);
    for (;;) {
        pollfd pfd{fd, events, 0};
        int n = ::poll(&pfd, 1, deadline.poll_ms());
        if (n > 0) return true;
        if (n == 0) return false;
        if (errno != EINTR)
            throw Error(JAL_STATUS_IO_ERROR, "poll on the emulator socket: " + errno_text(errno));
    }
}

[[noreturn]] void peer_gone()
{
    throw Error(JAL_STATUS_NO_DEVICE, "the emulator closed the connection");
}

// Connects without blocking: a listener whose backlog is full (it stopped accepting)
// makes a blocking AF_UNIX connect wait forever, a non-blocking one fail with EAGAIN.
// Returns 0 or an errno value; ETIMEDOUT when the backlog stayed full until `deadline`.
int connect_bounded(int fd, const sockaddr_un& addr, util::Deadline& deadline)
{
    for (;;) {
        if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) == 0) return 0;
        const int err = errno;
        if (err == EINTR) continue;
        if (err == EINPROGRESS) {
            pollfd pfd{fd, POLLOUT, 0};
            if (::poll(&pfd, 1, deadline.poll_ms()) <= 0) return ETIMEDOUT;
            int so_error = 0;
            socklen_t len = sizeof so_error;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
            return so_error;
        }
        if (err != EAGAIN) return err;
        if (deadline.expired()) return ETIMEDOUT;
        ::poll(nullptr, 0, std::min(10, deadline.poll_ms()));  // the backlog may drain
    }
}

// Nothing is sent to an emulator in a directory others could have planted it in, or run
// by another user (docs/security.md).
void check_trust(const std::string& path, int fd)
{
    const auto slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash ? slash : 1);
    if (auto why = emu::socket_dir_problem(dir); !why.empty())
        throw Error(JAL_STATUS_PERMISSION, why + "; not connecting to " + path);
    uid_t uid = 0;
    if (!emu::socket_peer_uid(fd, uid))
        throw Error(JAL_STATUS_IO_ERROR,
                    "cannot tell who serves " + path + ": " + errno_text(errno));
    if (!emu::trusted_peer_uid(uid))
        throw Error(JAL_STATUS_PERMISSION, "the emulator at " + path + " runs as uid " +
                                               std::to_string(uid) +
                                               ", neither this user nor root; not using it");
}

}  // namespace

SeqpacketSocket SeqpacketSocket::connect(const std::string& path, std::chrono::milliseconds timeout)
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path)
        throw Error(JAL_STATUS_NO_DEVICE, "socket path too long for AF_UNIX: " + path);
    std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);

    util::UniqueFd fd(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd)
        throw Error(JAL_STATUS_IO_ERROR, "socket(AF_UNIX, SOCK_SEQPACKET): " + errno_text(errno));
    util::Deadline deadline(timeout);
    const int err = connect_bounded(fd.get(), addr, deadline);
    if (err == ENOENT)
        throw Error(JAL_STATUS_NO_DEVICE,
                    "no emulator socket at " + path + " (is jal-emu running? set JAL_EMU_DIR)");
    if (err == ECONNREFUSED)
        throw Error(JAL_STATUS_NO_DEVICE,
                    "emulator socket " + path + " refuses connections (is jal-emu still running?)");
    if (err == ETIMEDOUT)
        throw Error(JAL_STATUS_TIMEOUT, "the emulator at " + path +
                                            " accepts no connections (connect timed out after " +
                                            util::describe(timeout) + ")");
    if (err != 0) throw Error(JAL_STATUS_IO_ERROR, "connect to " + path + ": " + errno_text(err));
    check_trust(path, fd.get());
    // Every later wait is bounded by poll; blocking mode is what receive() expects.
    const int flags = ::fcntl(fd.get(), F_GETFL);
    ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    return SeqpacketSocket(std::move(fd));
}

void SeqpacketSocket::send(std::span<const std::byte> packet, int pass_fd,
                           std::chrono::milliseconds timeout)
{
    iovec iov{const_cast<std::byte*>(packet.data()), packet.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (pass_fd >= 0) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(cmsg), &pass_fd, sizeof(int));
    }
    for (;;) {
        // MSG_DONTWAIT + poll: a stalled emulator makes us time out rather than block.
        ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n == static_cast<ssize_t>(packet.size())) return;
        if (n >= 0) throw Error(JAL_STATUS_IO_ERROR, "short send on the emulator socket");
        if (errno == EINTR) continue;
        if (errno == EAGAIN) {
            if (!wait_for(fd_.get(), POLLOUT, timeout))
                throw Error(JAL_STATUS_TIMEOUT,
                            "the emulator stopped reading requests (send timed out after " +
                                util::describe(timeout) + ")");
            continue;
        }
        if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN) peer_gone();
        throw Error(JAL_STATUS_IO_ERROR, "send to the emulator: " + errno_text(errno));
    }
}

size_t SeqpacketSocket::receive(std::span<std::byte> buffer, std::chrono::milliseconds timeout,
                                std::vector<util::UniqueFd>* fds)
{
    if (!wait_for(fd_.get(), POLLIN, timeout))
        throw Error(JAL_STATUS_TIMEOUT,
                    "no reply from the emulator within " + util::describe(timeout));
    iovec iov{buffer.data(), buffer.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))];
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t n;
    do n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    // Only the replies the caller expects descriptors with keep them; close any other so
    // a confused peer cannot leak them to us.
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (size_t i = 0; i < count; i++) {
                int fd;
                std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                if (fds && n > 0)
                    fds->emplace_back(fd);
                else
                    ::close(fd);
            }
        }
    }
    if (n < 0) {
        if (errno == ECONNRESET) peer_gone();
        throw Error(JAL_STATUS_IO_ERROR, "receive from the emulator: " + errno_text(errno));
    }
    if (n == 0) peer_gone();
    if (msg.msg_flags & MSG_TRUNC)
        throw Error(JAL_STATUS_PROTOCOL, "oversized message from the emulator");
    return static_cast<size_t>(n);
}

}  // namespace jal::direct
