// Sends one packet on a socket, with at most one descriptor (SCM_RIGHTS): how the tests that
// play a client speak the emulator's protocol at the byte level.
#pragma once

#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstring>

namespace jal::test {

// True when the whole packet went out; pass_fd < 0 sends none.
inline bool send_with_fd(int sock, const void* data, std::size_t len, int pass_fd = -1)
{
    iovec iov{const_cast<void*>(data), len};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (pass_fd >= 0) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &pass_fd, sizeof pass_fd);
    }
    return ::sendmsg(sock, &msg, MSG_NOSIGNAL) == static_cast<ssize_t>(len);
}

}  // namespace jal::test
