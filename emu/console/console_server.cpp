#include "emu/console/console_server.hpp"

#include "emu/chip/chip.hpp"
#include "emu/console/console_commands.hpp"
#include "emu/util/log.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <future>

namespace jal::emu {

namespace {
constexpr std::size_t kMaxLine = 16384;
constexpr auto kCoreTimeout = std::chrono::seconds(5);
}  // namespace

ConsoleServer::ConsoleServer(Chip& chip, std::string socket_path)
    : chip_(chip), listener_(
                       std::move(socket_path), SOCK_STREAM, [this](int fd) { serve(fd); }, 128,
                       UnixListener::Access::owner)
{}

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
            if (send(fd, reply.data(), reply.size(), MSG_NOSIGNAL) !=
                static_cast<ssize_t>(reply.size()))
                return;
        }
        if (buf.size() > kMaxLine) {
            const std::string reply = R"({"ok":false,"error":"line too long"})"
                                      "\n";
            send(fd, reply.data(), reply.size(), MSG_NOSIGNAL);
            return;
        }
    }
}

}  // namespace jal::emu
