// One chip's GDB remote stub: a TCP listener on 127.0.0.1 serving one debugger at a time
// (others wait in the backlog) on a thread of its own. The connection's packets go through
// PacketReader and RspCommands; CoreDebug halts, holds and resumes the core.
#pragma once

#include "emu/gdb/core_debug.hpp"
#include "emu/gdb/rsp_commands.hpp"
#include "emu/gdb/rsp_framing.hpp"

#include <atomic>
#include <cstdint>
#include <deque>
#include <string>
#include <thread>

namespace jal::emu::gdb {

class GdbServer {
public:
    // Binds 127.0.0.1:`port` (0: a free port the kernel picks). Throws std::runtime_error.
    GdbServer(CoreDebug& debug, std::uint16_t port, std::uint32_t chip);
    ~GdbServer();
    GdbServer(const GdbServer&) = delete;
    GdbServer& operator=(const GdbServer&) = delete;

    std::uint16_t port() const { return port_; }
    void start();
    void stop();

private:
    // One debugger's connection.
    struct Session {
        Session(int f, DebugTarget& target) : fd(f), commands(target) {}
        int fd;
        PacketReader reader;
        RspCommands commands;
        std::deque<RspInput> queued;  // packets and interrupts, in arrival order
        std::string last_sent;        // for a '-' from the debugger
        bool running = false;
        bool stop_reply_owed = false;  // after 'c' or 's'
        bool open = true;
    };

    void accept_loop();
    void serve(int fd);
    void receive(Session& s);
    void process_queued(Session& s);
    void execute(Session& s, const std::string& packet);
    void send_packet(Session& s, const std::string& payload);

    CoreDebug& debug_;
    const std::uint32_t chip_;
    int listen_fd_ = -1;
    int stop_fd_ = -1;  // eventfd: stop() wakes the thread
    std::uint16_t port_ = 0;
    std::atomic<bool> stopping_{false};
    std::thread thread_;
};

}  // namespace jal::emu::gdb
