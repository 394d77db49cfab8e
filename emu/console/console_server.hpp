// The bring-up console of one chip: a Unix stream socket (DIR/jalN.console) taking one
// command per line and answering one JSON line each (commands in console_commands.hpp).
// Commands run on the chip's management-core thread between firmware events.
#pragma once

#include "emu/transport/unix_listener.hpp"

#include <string>

namespace jal::emu {

class Chip;

class ConsoleServer {
public:
    ConsoleServer(Chip& chip, std::string socket_path);  // throws on failure
    void start() { listener_.start(); }
    void stop() { listener_.stop(); }

private:
    void serve(int fd);
    std::string execute(const std::string& line);

    Chip& chip_;
    UnixListener listener_;
};

}  // namespace jal::emu
