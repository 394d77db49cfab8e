// A Unix socket that accepts clients and serves each on a thread of its own, until
// stop(): the common part of the chip's data socket and its console.
#pragma once

#include <functional>
#include <list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace jal::emu {

class UnixListener {
public:
    // Binds and listens on `path` (replacing a stale socket file) with socket `type`
    // (SOCK_SEQPACKET or SOCK_STREAM). `serve` runs on its own thread per client and
    // returns when the client is done or its socket is shut down. Throws on failure.
    // At most `max_clients` connections are served at once; more are closed on arrival.
    // Access::owner serves only our own uid and root, whatever --allow-uid says: the
    // bring-up console reads and writes any tenant's memory.
    enum class Access { clients, owner };
    UnixListener(std::string path, int type, std::function<void(int fd)> serve,
                 std::size_t max_clients = 128, Access access = Access::clients);
    ~UnixListener();
    UnixListener(const UnixListener&) = delete;
    UnixListener& operator=(const UnixListener&) = delete;

    // Peers besides our own uid and root that every listener serves (default none).
    static void allow_peer_uids(std::vector<std::uint32_t> uids);

    void start();
    // Closes the socket, shuts every client down, joins their threads, removes the file.
    void stop();
    const std::string& path() const { return path_; }

private:
    struct Client {
        int fd;
        std::thread thread;
        bool done = false;
    };
    void accept_loop();
    // Accepts one connection; false when out of descriptors (the caller backs off).
    bool accept_one();
    void reap_finished_locked();
    bool peer_allowed(int fd) const;

    std::string path_;
    std::function<void(int)> serve_;
    int listen_fd_ = -1;
    std::size_t max_clients_;
    Access access_ = Access::clients;
    int stop_fd_ = -1;  // eventfd that wakes the accept loop
    int done_fd_ = -1;  // eventfd a finishing client's thread signals: reap it
    std::thread accept_thread_;
    std::mutex mutex_;
    std::list<Client> clients_;
    bool stopping_ = false;
    bool starved_ = false;  // accept failed for lack of descriptors (logged once)
};

}  // namespace jal::emu
