// fuzz-transport: the emulator's side of the transport protocol (emu/transport/connection)
// on arbitrary message sequences, against a chip whose management core is not running (as
// tests/unit/emu/protocol_test.cpp drives it).
//
// Input: messages, each: a control byte, a length byte, then that many message bytes (fewer
// at the end of the input). Control bits 0-1 attach descriptors (0 none, 1 a 64 KiB memfd
// sealed against shrinking, 2 an eventfd, 3 an unsealed memfd and an eventfd); bit 2 sets
// the header's size field to the real length; bit 3 sets the header's type to bits 5-7 of
// the control byte (0: HELLO); bit 4 adds 256 to the length (messages past the largest).
// The messages are queued on a socketpair, the peer's sending side is shut down, and the
// connection is served to the end on this thread.
//
// Checks: every reply is a REPLY whose size field is its length (32 bytes, or 96 for
// HELLO's), with a jal_status and the id of a request, in request order; no descriptor
// leaks (the process has as many open as before); once the connection ends its host
// function is detached.
#include <dirent.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "emu/chip/chip.hpp"
#include "emu/transport/connection.hpp"
#include "emu/util/log.hpp"
#include "fuzz_check.hpp"
#include "jal/emu/protocol.h"
#include "jal/hw/status.h"

namespace {

int open_fds()
{
    int n = 0;
    DIR* d = opendir("/proc/self/fd");
    FUZZ_CHECK(d);
    while (readdir(d)) ++n;
    closedir(d);
    return n;
}

int make_memfd(bool sealed)
{
    const int fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    FUZZ_CHECK(fd >= 0 && ftruncate(fd, 64 << 10) == 0);
    if (sealed) FUZZ_CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
    return fd;
}

// Sends one message with the descriptors its control byte asks for (closed after sending:
// the socket holds its own references until the server takes them).
void send_message(int sock, uint8_t control, std::vector<uint8_t>& msg)
{
    jal_msg_hdr hdr{};
    std::memcpy(&hdr, msg.data(), std::min(msg.size(), sizeof hdr));
    if (control & 4) hdr.size = static_cast<uint32_t>(msg.size());
    if (control & 8) hdr.type = (control >> 5) == 0 ? JAL_MSG_HELLO : control >> 5;
    std::memcpy(msg.data(), &hdr, std::min(msg.size(), sizeof hdr));

    std::vector<int> fds;
    if ((control & 3) == 1) fds.push_back(make_memfd(true));
    if ((control & 3) == 3) fds.push_back(make_memfd(false));
    if ((control & 3) >= 2) fds.push_back(eventfd(0, EFD_CLOEXEC));
    iovec iov{msg.data(), msg.size()};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * 2)> control_buf{};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    if (!fds.empty()) {
        m.msg_control = control_buf.data();
        m.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    FUZZ_CHECK(sendmsg(sock, &m, MSG_NOSIGNAL) == static_cast<ssize_t>(msg.size()));
    for (int fd : fds) close(fd);
}

// Reads every reply (closing the descriptors that come with them) and checks each against
// the requests' ids, in order.
void check_replies(int sock, const std::vector<uint64_t>& request_ids)
{
    size_t next_request = 0;
    for (;;) {
        alignas(8) std::array<std::byte, 512> buf{};
        iovec iov{buf.data(), buf.size()};
        alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * 4)> control{};
        msghdr m{};
        m.msg_iov = &iov;
        m.msg_iovlen = 1;
        m.msg_control = control.data();
        m.msg_controllen = control.size();
        const ssize_t n = recvmsg(sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (n <= 0) break;
        for (cmsghdr* c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
            for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); ++i) {
                int fd;
                std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
                close(fd);
            }
        FUZZ_CHECK(n == sizeof(jal_msg_reply) ||
                   n == sizeof(jal_msg_reply) + sizeof(jal_msg_hello_reply) ||
                   n == sizeof(jal_msg_reply) + sizeof(jal_msg_client_info_reply));
        jal_msg_reply r;
        std::memcpy(&r, buf.data(), sizeof r);
        FUZZ_CHECK(r.hdr.type == JAL_MSG_REPLY && r.hdr.size == static_cast<uint32_t>(n));
        FUZZ_CHECK(r.status < JAL_STATUS_COUNT_);
        while (next_request < request_ids.size() && request_ids[next_request] != r.hdr.id)
            ++next_request;
        FUZZ_CHECK(next_request < request_ids.size());  // a reply to a request, in order
        ++next_request;
    }
}

jal::emu::Chip& chip()
{
    static jal::emu::Chip* c = [] {
        jal::emu::Log::set_level(jal::emu::LogLevel::error);
        jal::emu::ChipConfig cfg;
        cfg.index = 0;
        return new jal::emu::Chip(cfg);
    }();
    return *c;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    jal::emu::Chip& c = chip();
    const int fds_before = open_fds();
    int sv[2];
    FUZZ_CHECK(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);

    std::vector<uint64_t> request_ids;
    size_t at = 0;
    for (int messages = 0; at + 2 <= size && messages < 64; ++messages) {
        const uint8_t control = data[at];
        size_t len = data[at + 1] + ((control & 16) ? 256u : 0u);
        at += 2;
        len = std::min(len, size - at);
        if (len == 0) continue;  // a zero-length datagram reads as the end of the stream
        std::vector<uint8_t> msg(data + at, data + at + len);
        at += len;
        send_message(sv[0], control, msg);
        jal_msg_hdr hdr{};
        if (msg.size() >= sizeof hdr) std::memcpy(&hdr, msg.data(), sizeof hdr);
        request_ids.push_back(hdr.id);
    }
    shutdown(sv[0], SHUT_WR);
    jal::emu::serve_connection(c, sv[1]);
    check_replies(sv[0], request_ids);
    close(sv[0]);
    close(sv[1]);

    for (int fn = 0; fn < JAL_MGMT_MAX_FUNCS; ++fn) FUZZ_CHECK(!c.host().present(fn));
    FUZZ_CHECK(open_fds() == fds_before);
    return 0;
}
