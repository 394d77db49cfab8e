// A jal-serve child process for the integration tests: started with `--port 0`, waited for
// until it prints the URL it listens on, stopped with SIGTERM.
#pragma once

#include <string>
#include <sys/types.h>
#include <vector>

namespace jal::test {

class ServeProcess {
public:
    // Runs `program args... --port 0`, its stderr to a file; waits (polling) until it says
    // "listening on http://HOST:PORT". Throws std::runtime_error with its output if it exits
    // first or takes more than a minute.
    ServeProcess(const std::string& program, const std::vector<std::string>& args);
    // SIGKILL if it still runs; removes the output file.
    ~ServeProcess();
    ServeProcess(const ServeProcess&) = delete;
    ServeProcess& operator=(const ServeProcess&) = delete;

    unsigned port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::string output() const;  // its stderr so far
    pid_t pid() const { return pid_; }

    // Sends `signal` (0: none, only wait), then waits for the exit; returns "" for exit
    // status 0, else how it ended. Bounded by `timeout_s` (then SIGKILL).
    std::string stop(int signal, int timeout_s = 60);

private:
    std::string output_path_;
    pid_t pid_ = -1;
    unsigned port_ = 0;
};

// A raw HTTP/1.1 client on one connection, for what curl cannot do on cue: read a stream
// up to a point, then hang up.
class RawConnection {
public:
    explicit RawConnection(unsigned port);
    ~RawConnection();
    RawConnection(const RawConnection&) = delete;
    RawConnection& operator=(const RawConnection&) = delete;

    // POSTs `body` (JSON) to `path`.
    void post(const std::string& path, const std::string& body);
    // Reads until the received bytes contain `text` (true) or the peer closes or 60 s pass
    // (false). Returns everything received so far in `received()`.
    bool read_until(const std::string& text);
    const std::string& received() const { return received_; }
    void close();

private:
    bool read_some(int timeout_ms);

    int fd_ = -1;
    std::string received_;
};

}  // namespace jal::test
