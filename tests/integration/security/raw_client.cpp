#include "raw_client.hpp"

#include "common/send_with_fd.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace jal::test {

RawClient::RawClient(const std::string& socket_path)
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket_path.c_str(), sizeof addr.sun_path - 1);
    fd_ = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const std::string why = std::strerror(errno);
        if (fd_ >= 0) ::close(fd_);
        throw std::runtime_error("connect to " + socket_path + ": " + why);
    }
}

RawClient::~RawClient()
{
    ::close(fd_);
}

bool RawClient::send(const void* data, std::size_t len, int pass_fd)
{
    return send_with_fd(fd_, data, len, pass_fd);
}

std::optional<RawReply> RawClient::receive(std::chrono::milliseconds timeout)
{
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return std::nullopt;
    std::array<std::byte, JAL_PROTO_MSG_MAX> buf{};
    iovec iov{buf.data(), buf.size()};
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
    RawReply r;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        for (std::size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            r.fds.push_back(fd);
        }
    }
    if (n < static_cast<ssize_t>(sizeof r.reply)) {
        for (int fd : r.fds) ::close(fd);
        return std::nullopt;
    }
    std::memcpy(&r.reply, buf.data(), sizeof r.reply);
    return r;
}

bool RawClient::closed_by_peer(std::chrono::milliseconds timeout)
{
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) return false;
    char byte;
    return ::recv(fd_, &byte, 1, MSG_DONTWAIT) == 0;
}

long RawClient::hello(const std::string& name, std::uint32_t flags, std::uint32_t version)
{
    jal_msg_hello h{};
    h.hdr = {JAL_MSG_HELLO, 0, sizeof h, next_id_++};
    h.proto_version = version;
    h.flags = flags;
    std::strncpy(h.client, name.c_str(), sizeof h.client - 1);
    if (!send(&h, sizeof h)) return -1;
    auto r = receive();
    return r ? static_cast<long>(r->reply.status) : -1;
}

long RawClient::request(const void* msg, std::size_t len, int pass_fd)
{
    if (!send(msg, len, pass_fd)) return -1;
    auto r = receive();
    if (!r) return -1;
    for (int fd : r->fds) ::close(fd);
    return static_cast<long>(r->reply.status);
}

}  // namespace jal::test
