// The bring-up console of one chip: a Unix stream socket (DIR/jalN.console) taking one
// command per line and answering one JSON line each (commands in console_commands.hpp).
// Commands run on the chip's management-core thread between firmware events.
#pragma once

#include <list>
#include <mutex>
#include <string>
#include <thread>

namespace jalemu {

class Chip;

class ConsoleServer {
public:
    ConsoleServer(Chip& chip, std::string socket_path);  // throws on failure
    ~ConsoleServer();
    ConsoleServer(const ConsoleServer&) = delete;
    ConsoleServer& operator=(const ConsoleServer&) = delete;
    void start();
    void stop();

private:
    void accept_loop();
    void serve(int fd);
    std::string execute(const std::string& line);

    Chip& chip_;
    std::string path_;
    int listen_fd_ = -1, stop_fd_ = -1;
    std::thread accept_thread_;
    std::mutex mutex_;
    std::list<std::pair<int, std::thread>> clients_;
    bool stopping_ = false;
};

}  // namespace jalemu
