// The direct transport: serves one chip on a Unix SOCK_SEQPACKET socket
// (jal/emu/protocol.h). Each connection is one host function of the chip and is served by
// its own thread; a connection that misbehaves or vanishes affects only itself.
#pragma once

#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace jalemu {

class Chip;

class SocketServer {
public:
    // Binds and listens on socket_path (replacing a stale socket file). Throws on failure.
    SocketServer(Chip& chip, std::string socket_path);
    ~SocketServer();
    SocketServer(const SocketServer&) = delete;
    SocketServer& operator=(const SocketServer&) = delete;

    void start();
    void stop();  // closes the socket and every connection, joins their threads
    const std::string& path() const { return path_; }

private:
    struct Connection {
        int fd;
        std::thread thread;
        bool done = false;
    };
    void accept_loop();
    void reap_finished_locked();

    Chip& chip_;
    std::string path_;
    int listen_fd_ = -1;
    int stop_fd_ = -1;  // eventfd that wakes the accept loop
    std::thread accept_thread_;
    std::mutex mutex_;
    std::list<Connection> connections_;
    bool stopping_ = false;
};

}  // namespace jalemu
