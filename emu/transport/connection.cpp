#include "emu/transport/connection.hpp"

#include "emu/chip/chip.hpp"
#include "emu/util/log.hpp"
#include "jal/emu/protocol.h"
#include "jal/hw/status.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <span>

namespace jal::emu {

namespace {

struct Received {
    std::size_t size = 0;
    bool truncated = false;
    int fd = -1;  // at most one descriptor is meaningful; extras are closed
};

// Returns nullopt at end of stream or on a fatal socket error.
std::optional<Received> receive(int sock, std::byte* buf, std::size_t cap)
{
    iovec iov{buf, cap};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * 4)> control{};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
    ssize_t n;
    do n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return std::nullopt;
    Received r;
    r.size = static_cast<std::size_t>(n);
    r.truncated = msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC);
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            if (r.fd < 0)
                r.fd = fd;
            else
                close(fd);
        }
    }
    return r;
}

// Sends one message, with descriptors (SCM_RIGHTS; the receiver gets its own copies).
bool send_all(int sock, const void* data, std::size_t len, std::span<const int> fds = {})
{
    iovec iov{const_cast<void*>(data), len};
    alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * 4)> control{};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (!fds.empty() && fds.size() <= 4) {
        msg.msg_control = control.data();
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n;
    do n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == static_cast<ssize_t>(len);
}

// Waits until sock is readable or `deadline` passes; false on timeout.
bool await_readable(int sock, std::chrono::steady_clock::time_point deadline)
{
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        pollfd p{sock, POLLIN, 0};
        const int n = poll(&p, 1, static_cast<int>(std::max<std::int64_t>(left.count(), 0)));
        if (n > 0) return true;
        if (n == 0 || errno != EINTR) return false;
    }
}

// Counts a connection as pending (no HELLO yet) while it lives or until release().
class PendingSlot {
public:
    PendingSlot(std::atomic<unsigned>& pending, unsigned max) : pending_(pending)
    {
        held_ = pending_.fetch_add(1) < max;
        if (!held_) pending_.fetch_sub(1);
    }
    ~PendingSlot() { release(); }
    bool held() const { return held_; }
    void release()
    {
        if (held_) pending_.fetch_sub(1);
        held_ = false;
    }

private:
    std::atomic<unsigned>& pending_;
    bool held_;
};

class Session {
public:
    // Until HELLO succeeds the connection holds `slot` and must finish by `hello_deadline`.
    Session(Chip& chip, int sock, PendingSlot& slot,
            std::chrono::steady_clock::time_point hello_deadline)
        : chip_(chip), sock_(sock), slot_(slot), hello_deadline_(hello_deadline)
    {}
    ~Session()
    {
        if (fn_ >= 0) {
            chip_.host().detach(fn_);
            log(LogLevel::info, "chip{}: function {} ({}) detached", chip_.index(), fn_, client_);
        }
    }

    void run()
    {
        alignas(8) std::array<std::byte, JAL_PROTO_MSG_MAX> buf;
        for (;;) {
            if (fn_ < 0 && !await_readable(sock_, hello_deadline_)) {
                log(LogLevel::warn, "chip{}: no HELLO in time; connection closed", chip_.index());
                return;
            }
            auto r = receive(sock_, buf.data(), buf.size());
            if (!r) return;
            const int fd = r->fd;
            bool fd_taken = false;
            const bool go_on = handle(buf.data(), *r, fd_taken);
            if (fd >= 0 && !fd_taken) close(fd);
            if (!go_on) return;
            if (fn_ >= 0) slot_.release();
        }
    }

private:
    bool reply(const jal_msg_hdr& req, std::uint32_t status, std::uint64_t value = 0,
               const void* payload = nullptr, std::size_t payload_len = 0,
               std::span<const int> fds = {})
    {
        alignas(8) std::array<std::byte, sizeof(jal_msg_reply) + sizeof(jal_msg_hello_reply)> out{};
        jal_msg_reply rep{};
        rep.hdr.type = JAL_MSG_REPLY;
        rep.hdr.size = static_cast<std::uint32_t>(sizeof rep + payload_len);
        rep.hdr.id = req.id;
        rep.status = status;
        rep.value = value;
        std::memcpy(out.data(), &rep, sizeof rep);
        if (payload_len) std::memcpy(out.data() + sizeof rep, payload, payload_len);
        return send_all(sock_, out.data(), sizeof rep + payload_len, fds);
    }

    bool protocol_error(const jal_msg_hdr& req, const char* why)
    {
        log(LogLevel::warn, "chip{}: malformed message from {} (type {}): {}", chip_.index(),
            client_.empty() ? "unnamed client" : client_, req.type, why);
        return reply(req, JAL_STATUS_PROTOCOL);
    }

    // HELLO: attaches the function. Returns false when the connection must end.
    bool hello(const jal_msg_hdr& hdr, const jal_msg_hello& m)
    {
        if (fn_ >= 0) return protocol_error(hdr, "second HELLO");
        if ((m.proto_version >> 16) != JAL_PROTO_VERSION_MAJOR) {
            reply(hdr, JAL_STATUS_VERSION_MISMATCH);
            return false;
        }
        if (m.flags) {
            log(LogLevel::warn, "chip{}: HELLO with reserved flags {:#x} refused", chip_.index(),
                m.flags);
            return reply(hdr, JAL_STATUS_INVALID_FIELD);
        }
        client_ = printable_client_name(m.client, sizeof m.client);
        fn_ = chip_.host().attach();
        if (fn_ < 0) {
            log(LogLevel::warn, "chip{}: refusing {}: all {} host functions in use", chip_.index(),
                client_, JAL_MGMT_MAX_FUNCS);
            reply(hdr, JAL_STATUS_BUSY);
            return false;
        }
        ucred cred{};
        socklen_t cred_len = sizeof cred;
        if (getsockopt(sock_, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0) cred.pid = 0;
        chip_.host().set_client(fn_, static_cast<std::uint32_t>(cred.pid), client_);
        log(LogLevel::info, "chip{}: {} attached as function {} (pid {})", chip_.index(), client_,
            fn_, cred.pid);
        jal_msg_hello_reply hr{};
        hr.proto_version = JAL_PROTO_VERSION;
        hr.function = static_cast<std::uint32_t>(fn_);
        hr.chip_index = chip_.index();
        hr.msix_vectors = JAL_MSIX_VECTORS;
        hr.bar_size[JAL_BAR_REGS] = JAL_BAR_REGS_SIZE;
        hr.bar_size[JAL_BAR_DOORBELL] = JAL_BAR_DOORBELL_SIZE;
        hr.bar_size[JAL_BAR_MSIX] = JAL_BAR_MSIX_SIZE;
        return reply(hdr, JAL_STATUS_OK, 0, &hr, sizeof hr);
    }

    // CLIENT_INFO: who holds another function of this chip.
    bool client_info(const jal_msg_hdr& hdr, const std::byte* data, const Received& r)
    {
        if (r.size != sizeof(jal_msg_client_info))
            return protocol_error(hdr, "bad CLIENT_INFO size");
        jal_msg_client_info m;
        std::memcpy(&m, data, sizeof m);
        if (m.flags) return reply(hdr, JAL_STATUS_INVALID_FIELD);
        if (m.function >= JAL_MGMT_MAX_FUNCS) return reply(hdr, JAL_STATUS_OUT_OF_RANGE);
        const HostInterface::ClientRecord c = chip_.host().client(static_cast<int>(m.function));
        jal_msg_client_info_reply out{};
        out.present = c.present;
        out.pid = c.pid;
        out.contexts = c.contexts;
        std::memcpy(out.client, c.name.data(), std::min(c.name.size(), sizeof out.client - 1));
        return reply(hdr, JAL_STATUS_OK, 0, &out, sizeof out);
    }

    // Returns false when the connection must end.
    bool handle(const std::byte* data, const Received& r, bool& fd_taken)
    {
        jal_msg_hdr hdr{};
        if (r.size < sizeof hdr) {
            hdr.type = 0;
            return protocol_error(hdr, "shorter than a header");
        }
        std::memcpy(&hdr, data, sizeof hdr);
        if (r.truncated) return protocol_error(hdr, "larger than the largest message");
        if (hdr.size != r.size) return protocol_error(hdr, "size field does not match the packet");
        auto expect = [&](std::size_t size) { return r.size == size; };

        if (hdr.type == JAL_MSG_HELLO) {
            if (!expect(sizeof(jal_msg_hello))) return protocol_error(hdr, "bad HELLO size");
            jal_msg_hello m;
            std::memcpy(&m, data, sizeof m);
            return hello(hdr, m);
        }
        if (fn_ < 0) return protocol_error(hdr, "HELLO must come first");

        switch (hdr.type) {
        case JAL_MSG_REG_READ:
        case JAL_MSG_REG_WRITE: {
            if (!expect(sizeof(jal_msg_reg)))
                return protocol_error(hdr, "bad register message size");
            jal_msg_reg m;
            std::memcpy(&m, data, sizeof m);
            if ((m.width != 4 && m.width != 8) || m.offset % m.width || m.bar > 5)
                return reply(hdr, JAL_STATUS_INVALID_FIELD);
            if (hdr.type == JAL_MSG_REG_READ)
                return reply(hdr, JAL_STATUS_OK,
                             chip_.host().host_read(fn_, m.bar, m.offset, m.width));
            const std::uint32_t st =
                chip_.host().host_write(fn_, m.bar, m.offset, m.width, m.value);
            if (hdr.flags & JAL_MSG_F_ACK) return reply(hdr, st);
            return true;
        }
        case JAL_MSG_MEM_MAP:
        case JAL_MSG_MEM_UNMAP: {
            if (!expect(sizeof(jal_msg_mem_map))) return protocol_error(hdr, "bad MEM_MAP size");
            jal_msg_mem_map m;
            std::memcpy(&m, data, sizeof m);
            if (m.flags || m.reserved) return reply(hdr, JAL_STATUS_INVALID_FIELD);
            if (hdr.type == JAL_MSG_MEM_UNMAP)
                return reply(hdr, chip_.host().memory(fn_).unmap(m.bus_addr, m.size));
            if (r.fd < 0) return reply(hdr, JAL_STATUS_INVALID_FIELD);
            // The region holds its own mapping; the descriptor is closed by the caller.
            return reply(hdr, chip_.host().memory(fn_).map(m.bus_addr, m.size, r.fd, m.fd_offset));
        }
        case JAL_MSG_SET_IRQ: {
            if (!expect(sizeof(jal_msg_set_irq))) return protocol_error(hdr, "bad SET_IRQ size");
            jal_msg_set_irq m;
            std::memcpy(&m, data, sizeof m);
            if (m.flags) return reply(hdr, JAL_STATUS_INVALID_FIELD);
            fd_taken = r.fd >= 0;
            return reply(hdr, chip_.host().set_irq(fn_, m.vector, r.fd));
        }
        case JAL_MSG_CLIENT_INFO:
            return client_info(hdr, data, r);
        case JAL_MSG_GET_DOORBELLS: {
            if (!expect(sizeof(jal_msg_hdr))) return protocol_error(hdr, "bad GET_DOORBELLS size");
            auto db = chip_.host().doorbells(fn_);
            if (!db) return reply(hdr, JAL_STATUS_NO_MEMORY);
            const std::array<int, 2> fds{db->memfd(), db->kickfd()};
            return reply(hdr, JAL_STATUS_OK, 0, nullptr, 0, fds);
        }
        default:
            return protocol_error(hdr, "unknown message type");
        }
    }

    Chip& chip_;
    int sock_;
    PendingSlot& slot_;
    std::chrono::steady_clock::time_point hello_deadline_;
    int fn_ = -1;
    std::string client_;
};

}  // namespace

std::string printable_client_name(const char* name, std::size_t max_len)
{
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (std::size_t i = 0; i < max_len && name[i]; ++i) {
        const auto c = static_cast<unsigned char>(name[i]);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += static_cast<char>(c);
        } else {
            out += "\\x";
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

void serve_connection(Chip& chip, int fd, const SessionPolicy& policy,
                      std::atomic<unsigned>& pending)
{
    {
        PendingSlot slot(pending, policy.max_pending);
        if (!slot.held()) {
            log(LogLevel::warn, "chip{}: too many connections waiting for HELLO; one refused",
                chip.index());
        } else {
            Session(chip, fd, slot, std::chrono::steady_clock::now() + policy.hello_timeout).run();
        }
    }
    // The peer sees the end now, not when the listener gets round to closing the fd.
    shutdown(fd, SHUT_RDWR);
}

void serve_connection(Chip& chip, int fd)
{
    std::atomic<unsigned> pending{0};
    serve_connection(chip, fd, SessionPolicy{}, pending);
}

}  // namespace jal::emu
