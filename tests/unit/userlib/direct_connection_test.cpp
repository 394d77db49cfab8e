// DirectConnection over a socketpair, with a scripted peer playing the emulator: reply
// matching, posted writes, version check, bounded waits, a vanished peer.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <sys/socket.h>
#include <thread>

#include <jal/error.hpp>

#include "backend/direct/direct_connection.hpp"

namespace {

using namespace std::chrono_literals;
using namespace jal::direct;

// The far end of the socketpair: answers each request through `answer`.
class ScriptedPeer {
public:
    using Answer = std::function<void(int fd, const jal_msg_hdr& hdr, const std::byte* msg)>;

    ScriptedPeer()
    {
        int sv[2];
        EXPECT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
        client_fd = sv[0];
        peer_fd_ = sv[1];
    }
    ~ScriptedPeer()
    {
        if (thread_.joinable()) thread_.join();
        if (peer_fd_ >= 0) ::close(peer_fd_);
    }
    void serve(Answer answer, int requests)
    {
        thread_ = std::thread([this, answer, requests] {
            for (int i = 0; i < requests; i++) {
                std::byte buf[JAL_PROTO_MSG_MAX];
                ssize_t n = ::recv(peer_fd_, buf, sizeof buf, 0);
                if (n <= 0) return;
                jal_msg_hdr hdr;
                std::memcpy(&hdr, buf, sizeof hdr);
                answer(peer_fd_, hdr, buf);
            }
        });
    }
    void hang_up()
    {
        if (thread_.joinable()) thread_.join();
        ::close(peer_fd_);
        peer_fd_ = -1;
    }

    int client_fd = -1;

private:
    int peer_fd_ = -1;
    std::thread thread_;
};

void send_reply(int fd, uint64_t id, uint32_t status, uint64_t value = 0,
                const jal_msg_hello_reply* hello = nullptr)
{
    struct {
        jal_msg_reply r;
        jal_msg_hello_reply h;
    } out{};
    out.r.hdr.type = JAL_MSG_REPLY;
    out.r.hdr.size = sizeof(jal_msg_reply) + (hello ? sizeof *hello : 0);
    out.r.hdr.id = id;
    out.r.status = status;
    out.r.value = value;
    if (hello) out.h = *hello;
    ASSERT_EQ(::send(fd, &out, out.r.hdr.size, 0), static_cast<ssize_t>(out.r.hdr.size));
}

DirectConnection connect_to(ScriptedPeer& peer, std::chrono::milliseconds timeout = 1s)
{
    return DirectConnection(SeqpacketSocket(jal::util::UniqueFd(peer.client_fd)), timeout);
}

jal_status status_of(const std::function<void()>& f)
{
    try {
        f();
    } catch (const jal::Error& e) {
        return e.status();
    }
    return JAL_STATUS_OK;
}

TEST(DirectConnection, HelloReturnsTheFunction)
{
    ScriptedPeer peer;
    peer.serve(
        [](int fd, const jal_msg_hdr& hdr, const std::byte*) {
            jal_msg_hello_reply h{};
            h.proto_version = JAL_PROTO_VERSION;
            h.function = 2;
            send_reply(fd, hdr.id, JAL_STATUS_OK, 0, &h);
        },
        1);
    auto conn = connect_to(peer);
    EXPECT_EQ(conn.hello("test").function, 2u);
}

TEST(DirectConnection, HelloRefusesAnotherMajorVersion)
{
    ScriptedPeer peer;
    peer.serve(
        [](int fd, const jal_msg_hdr& hdr, const std::byte*) {
            jal_msg_hello_reply h{};
            h.proto_version = (JAL_PROTO_VERSION_MAJOR + 1) << 16;
            send_reply(fd, hdr.id, JAL_STATUS_OK, 0, &h);
        },
        1);
    auto conn = connect_to(peer);
    EXPECT_EQ(status_of([&] { conn.hello("test"); }), JAL_STATUS_VERSION_MISMATCH);
}

TEST(DirectConnection, PostedWritesGetNoReplyAndStaleRepliesAreSkipped)
{
    ScriptedPeer peer;
    std::vector<jal_msg_hdr> seen;
    peer.serve(
        [&](int fd, const jal_msg_hdr& hdr, const std::byte* msg) {
            seen.push_back(hdr);
            if (hdr.type == JAL_MSG_REG_WRITE) {
                // A posted write the emulator rejects: its reply has nobody waiting.
                send_reply(fd, hdr.id, JAL_STATUS_INVALID_FIELD);
                return;
            }
            jal_msg_reg reg;
            std::memcpy(&reg, msg, sizeof reg);
            send_reply(fd, hdr.id, JAL_STATUS_OK, reg.offset + 1);
        },
        2);
    auto conn = connect_to(peer);
    conn.reg_write(0, 0x300, 4, 5, false);
    EXPECT_EQ(conn.reg_read(0, 0x20, 4), 0x21u);
    EXPECT_EQ(conn.rejected_posted_writes(), 1u);
    peer.hang_up();
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_LT(seen[0].id, seen[1].id);
    EXPECT_EQ(seen[0].flags, 0);
}

TEST(DirectConnection, ErrorReplyBecomesAnError)
{
    ScriptedPeer peer;
    peer.serve([](int fd, const jal_msg_hdr& hdr,
                  const std::byte*) { send_reply(fd, hdr.id, JAL_STATUS_DMA_FAULT); },
               1);
    auto conn = connect_to(peer);
    try {
        conn.mem_unmap(0x1000, 4096);
        FAIL();
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_DMA_FAULT);
        EXPECT_STREQ(e.what(), "MEM_UNMAP rejected by the emulator: DMA fault");
    }
}

TEST(DirectConnection, SilentPeerTimesOut)
{
    ScriptedPeer peer;
    peer.serve([](int, const jal_msg_hdr&, const std::byte*) {}, 1);
    auto conn = connect_to(peer, 100ms);
    auto start = std::chrono::steady_clock::now();
    try {
        conn.reg_read(0, 0x20, 4);
        FAIL();
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), JAL_STATUS_TIMEOUT);
        EXPECT_STREQ(e.what(), "the emulator did not answer REG_READ within 100 ms");
    }
    EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(DirectConnection, VanishedPeerIsNoDevice)
{
    ScriptedPeer peer;
    auto conn = connect_to(peer);
    peer.hang_up();
    EXPECT_EQ(status_of([&] { conn.reg_read(0, 0x20, 4); }), JAL_STATUS_NO_DEVICE);
}

}  // namespace
