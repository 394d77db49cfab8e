#include "console/console_server.hpp"

#include "chip/chip.hpp"
#include "console/console_commands.hpp"
#include "util/log.hpp"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <future>
#include <stdexcept>

namespace jalemu {

namespace {
constexpr std::size_t kMaxLine = 16384;
constexpr auto kCoreTimeout = std::chrono::seconds(5);
}  // namespace

ConsoleServer::ConsoleServer(Chip& chip, std::string socket_path) : chip_(chip), path_(std::move(socket_path))
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path_.size() >= sizeof addr.sun_path) throw std::runtime_error("console path too long: " + path_);
    std::memcpy(addr.sun_path, path_.c_str(), path_.size() + 1);
    listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    unlink(path_.c_str());
    if (listen_fd_ < 0 || bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        listen(listen_fd_, 4) != 0)
        throw std::runtime_error("cannot listen on " + path_ + ": " + std::strerror(errno));
    stop_fd_ = eventfd(0, EFD_CLOEXEC);
}

ConsoleServer::~ConsoleServer()
{
    stop();
    close(listen_fd_);
    close(stop_fd_);
}

void ConsoleServer::start()
{
    accept_thread_ = std::thread([this] { accept_loop(); });
}

void ConsoleServer::accept_loop()
{
    for (;;) {
        pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
        if (poll(fds, 2, -1) < 0 && errno != EINTR) return;
        if (fds[1].revents) return;
        if (!(fds[0].revents & POLLIN)) continue;
        const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) continue;
        std::lock_guard lock(mutex_);
        if (stopping_) {
            close(fd);
            return;
        }
        clients_.emplace_back(fd, std::thread([this, fd] { serve(fd); }));
    }
}

std::string ConsoleServer::execute(const std::string& line)
{
    auto done = std::make_shared<std::promise<std::string>>();
    auto result = done->get_future();
    chip_.clock().post([this, line, done] { done->set_value(run_console_command(chip_, line)); });
    if (result.wait_for(kCoreTimeout) != std::future_status::ready)
        return R"json({"ok":false,"error":"the management core did not reach an idle point within 5 s (firmware busy or hung)"})json";
    return result.get();
}

void ConsoleServer::serve(int fd)
{
    std::string buf;
    char chunk[4096];
    for (;;) {
        const ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) return;
        buf.append(chunk, static_cast<std::size_t>(n));
        for (std::size_t nl; (nl = buf.find('\n')) != std::string::npos;) {
            std::string reply = execute(buf.substr(0, nl)) + "\n";
            buf.erase(0, nl + 1);
            if (send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(reply.size())) return;
        }
        if (buf.size() > kMaxLine) {
            const std::string reply = R"({"ok":false,"error":"line too long"})" "\n";
            send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
            return;
        }
    }
}

void ConsoleServer::stop()
{
    {
        std::lock_guard lock(mutex_);
        if (stopping_) return;
        stopping_ = true;
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = write(stop_fd_, &one, sizeof one);
    if (accept_thread_.joinable()) accept_thread_.join();
    for (auto& [fd, t] : clients_) shutdown(fd, SHUT_RDWR);
    for (auto& [fd, t] : clients_) {
        t.join();
        close(fd);
    }
    clients_.clear();
    unlink(path_.c_str());
}

}  // namespace jalemu
