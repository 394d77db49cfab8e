#include "emu/gdb/gdb_server.hpp"

#include "emu/util/log.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace jal::emu::gdb {

namespace {
std::runtime_error sys_error(const std::string& what)
{
    return std::runtime_error(what + ": " + std::strerror(errno));
}

bool send_all(int fd, std::string_view data)
{
    while (!data.empty()) {
        const ssize_t n = send(fd, data.data(), data.size(), MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return false;
        data.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}
}  // namespace

GdbServer::GdbServer(CoreDebug& debug, std::uint16_t port, std::uint32_t chip)
    : debug_(debug), chip_(chip)
{
    listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd_ < 0) throw sys_error("gdb stub socket");
    const int one = 1;
    setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listen_fd_, 4) != 0 ||
        getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
        const auto e = sys_error("gdb stub for chip " + std::to_string(chip) +
                                 " on 127.0.0.1:" + std::to_string(port));
        close(listen_fd_);
        throw e;
    }
    port_ = ntohs(addr.sin_port);
    stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0) {
        close(listen_fd_);
        throw sys_error("eventfd");
    }
}

GdbServer::~GdbServer()
{
    stop();
    close(listen_fd_);
    close(stop_fd_);
}

void GdbServer::start()
{
    thread_ = std::thread([this] { accept_loop(); });
}

void GdbServer::stop()
{
    if (!thread_.joinable()) return;
    stopping_ = true;
    debug_.abandon();
    const std::uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof one);
    thread_.join();
}

void GdbServer::accept_loop()
{
    while (!stopping_) {
        pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
        if (stopping_ || !(fds[0].revents & POLLIN)) continue;
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        log(LogLevel::info, "chip{}: gdb attached", chip_);
        try {
            serve(fd);
        } catch (const std::exception& e) {
            log(LogLevel::warn, "chip{}: gdb connection dropped: {}", chip_, e.what());
        }
        close(fd);
        debug_.release();
        log(LogLevel::info, "chip{}: gdb detached; the core runs on", chip_);
    }
}

// All-stop mode: while the core runs, only an interrupt (0x03) is acted on at once; other
// packets wait until it halts. A debugger that connects to a running core halts it, as
// QEMU's stub does.
void GdbServer::serve(int fd)
{
    Session s{fd, debug_.target()};
    debug_.attach();
    s.running = !debug_.halted();
    if (s.running) debug_.interrupt(true);
    while (s.open && !stopping_) {
        if (s.running && debug_.halted()) {
            s.running = false;
            if (std::exchange(s.stop_reply_owed, false))
                send_packet(s, s.commands.handle("?").reply);
        }
        process_queued(s);
        if (!s.open) break;
        pollfd fds[3] = {{fd, POLLIN, 0}, {debug_.wake_fd(), POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        if (poll(fds, 3, -1) < 0 && errno != EINTR) throw sys_error("poll");
        if (fds[1].revents & POLLIN) debug_.drain_wake();
        if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) receive(s);
    }
}

void GdbServer::receive(Session& s)
{
    char buf[4096];
    const ssize_t n = recv(s.fd, buf, sizeof buf, 0);
    if (n <= 0) {
        s.open = false;
        return;
    }
    for (RspInput& in : s.reader.feed({buf, static_cast<std::size_t>(n)})) {
        switch (in.kind) {
        case RspInput::Kind::packet:
            if (!s.commands.no_ack() && !send_all(s.fd, "+")) s.open = false;
            s.queued.push_back(std::move(in));
            break;
        case RspInput::Kind::interrupt:  // after the packets before it (a 'c' it follows)
            s.queued.push_back(std::move(in));
            break;
        case RspInput::Kind::nack:
            if (!s.last_sent.empty() && !send_all(s.fd, s.last_sent)) s.open = false;
            break;
        case RspInput::Kind::malformed:
            if (!send_all(s.fd, "-")) s.open = false;
            break;
        case RspInput::Kind::ack:
            break;
        }
    }
}

// In arrival order: packets wait while the core runs, an interrupt acts at once.
void GdbServer::process_queued(Session& s)
{
    while (s.open && !s.queued.empty()) {
        RspInput& in = s.queued.front();
        if (in.kind == RspInput::Kind::interrupt) {
            if (s.running) debug_.interrupt();
        } else if (s.running) {
            return;
        } else {
            execute(s, in.payload);
        }
        s.queued.pop_front();
    }
}

void GdbServer::execute(Session& s, const std::string& packet)
{
    const CommandResult r = s.commands.handle(packet);
    switch (r.resume) {
    case Resume::none:
        send_packet(s, r.reply);
        return;
    case Resume::cont:
    case Resume::step:
        s.running = true;
        s.stop_reply_owed = true;
        debug_.resume(r.resume == Resume::step, r.resume_at);
        return;
    case Resume::detach:
        debug_.release();  // before the reply: once gdb has it, the core is free
        send_packet(s, r.reply);
        s.open = false;
        return;
    case Resume::kill:
        debug_.release();
        s.open = false;
        return;
    }
}

void GdbServer::send_packet(Session& s, const std::string& payload)
{
    s.last_sent = frame_packet(payload);
    if (!send_all(s.fd, s.last_sent)) s.open = false;
}

}  // namespace jal::emu::gdb
