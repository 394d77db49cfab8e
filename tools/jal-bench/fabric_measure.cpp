// The measured half of `jal-bench fabric`: a child process is the far end (first a raw
// FabricEndpoint with a registered region, then a Domain holding chip 1), this process
// the near end; a socket pair between the two carries only the benchmark's own
// coordination (the raw endpoint's address and key, "next", "done"), never data.
#include "fabric_bench.hpp"

#include "emu/fabric/domain.hpp"
#include "emu/fabric/fabric_endpoint.hpp"
#include "emu/fabric/topology.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace jal::bench {

namespace {

using namespace jal::emu::fabric;
using Clock = std::chrono::steady_clock;

constexpr std::size_t kLatencyBytes = 64;
constexpr unsigned kLatencySamples = 200;

// Anonymous memory standing for a chip's HBM (or the raw target's buffer).
struct Memory {
    explicit Memory(std::size_t n) : size(n)
    {
        base = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (base == MAP_FAILED) throw std::runtime_error("fabric bench: out of memory");
        std::memset(base, 0x5a, n);  // touched: no page faults inside the timed loops
    }
    ~Memory() { munmap(base, size); }
    void* base;
    std::size_t size;
};

void send_all(int fd, const void* p, std::size_t n)
{
    const auto* b = static_cast<const char*>(p);
    while (n) {
        const ssize_t w = ::send(fd, b, n, MSG_NOSIGNAL);
        if (w <= 0) throw std::runtime_error("fabric bench: the other process is gone");
        b += w, n -= static_cast<std::size_t>(w);
    }
}

void recv_all(int fd, void* p, std::size_t n)
{
    auto* b = static_cast<char*>(p);
    while (n) {
        const ssize_t r = ::recv(fd, b, n, 0);
        if (r <= 0) throw std::runtime_error("fabric bench: the other process is gone");
        b += r, n -= static_cast<std::size_t>(r);
    }
}

bool readable(int fd)
{
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
}

// A TCP port nothing listens on right now (for the domain's topology).
int free_port()
{
    const int fd = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
    socklen_t len = sizeof a;
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    close(fd);
    return ntohs(a.sin_port);
}

std::string topology_json(const std::string& provider, int port_a, int port_b)
{
    const auto addr = [&](int port, const char* name) {
        return provider == "tcp" ? "127.0.0.1:" + std::to_string(port)
                                 : "jal-bench-" + std::to_string(getpid()) + "-" + name;
    };
    return R"({"provider": ")" + provider + R"(", "scale_up": "switched", "processes": [
        {"name": "a", "address": ")" +
           addr(port_a, "a") + R"(", "chips": [0]},
        {"name": "b", "address": ")" +
           addr(port_b, "b") + R"(", "chips": [1]}]})";
}

EndpointOptions endpoint_options(const std::string& provider)
{
    EndpointOptions o;
    o.provider = provider;
    if (provider == "tcp") o.node = "127.0.0.1";  // loopback, any port
    o.timeout = std::chrono::seconds(60);
    return o;
}

// The far end: serves RMA into its memory until told to go on, then does the same as
// chip 1 of a domain.
[[noreturn]] void far_end(int fd, const FabricBenchOptions& o, const std::string& topology)
{
    try {
        const std::size_t max = *std::max_element(o.sizes.begin(), o.sizes.end());
        Memory memory(max);
        {
            FabricEndpoint ep(endpoint_options(o.provider));
            const RemoteRegion region = ep.register_memory(memory.base, memory.size, true);
            const FabricAddress address = ep.address();
            const std::uint64_t n = address.size();
            send_all(fd, &n, sizeof n);
            send_all(fd, address.data(), address.size());
            send_all(fd, &region, sizeof region);
            while (!readable(fd)) {  // the provider moves peers' RMA meanwhile
                ep.progress();
                std::this_thread::yield();  // as a domain's progress thread does
            }
            char go;
            recv_all(fd, &go, 1);
        }
        Domain domain(parse_topology(topology), {"b"}, {{memory.base, memory.size}});
        char done;
        recv_all(fd, &done, 1);
    } catch (const std::exception& e) {
        std::cerr << "jal-bench fabric (far end): " << e.what() << '\n';
        _exit(1);
    }
    _exit(0);
}

struct Rate {
    double gbps = 0;
    std::uint64_t transfers = 0;
};

// Runs `move(bytes)` for about `seconds` (at least 3 times) after one warm-up.
template <class Move>
Rate measure(std::uint64_t bytes, double seconds, Move&& move)
{
    move(bytes);
    Rate r;
    const auto t0 = Clock::now();
    double elapsed = 0;
    while (r.transfers < 3 || elapsed < seconds) {
        move(bytes);
        ++r.transfers;
        elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    }
    r.gbps = static_cast<double>(bytes) * static_cast<double>(r.transfers) / elapsed / 1e9;
    return r;
}

// The median completion time of a small write, in µs.
template <class Move>
double latency_us(Move&& move)
{
    std::vector<double> us;
    for (unsigned i = 0; i < kLatencySamples + 10; ++i) {
        const auto t0 = Clock::now();
        move(kLatencyBytes);
        if (i >= 10)
            us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::nth_element(us.begin(), us.begin() + static_cast<long>(us.size() / 2), us.end());
    return us[us.size() / 2];
}

template <class Move>
nlohmann::json sweep(const FabricBenchOptions& o, const char* what, Move&& move)
{
    nlohmann::json rows = nlohmann::json::array();
    for (std::uint64_t bytes : o.sizes) {
        if (!o.quiet) std::cerr << "jal-bench fabric: " << what << ", " << bytes << " B\n";
        const Rate r = measure(bytes, o.seconds_per_size, move);
        rows.push_back({{"bytes", bytes}, {"gbps", r.gbps}, {"transfers", r.transfers}});
    }
    return {{"sizes", rows}, {"latency_us", latency_us(move)}};
}

// One message as the provider does best with it: in chunks of 1 MiB, 16 in flight (what
// the domain does too), posted and their completions polled.
void pipelined_write(FabricEndpoint& ep, std::uint64_t peer, const Memory& source,
                     std::uint64_t bytes, const RemoteRegion& region)
{
    constexpr std::uint64_t kChunk = 1 << 20, kInFlight = 16;
    std::uint64_t issued = 0, done = 0, in_flight = 0;
    std::vector<Completion> completions;
    while (done < bytes) {
        while (issued < bytes && in_flight < kInFlight) {
            const std::uint64_t n = std::min(kChunk, bytes - issued);
            if (!ep.post_write(peer, static_cast<char*>(source.base) + issued, n, region, issued,
                               reinterpret_cast<void*>(n)))
                break;
            issued += n;
            ++in_flight;
        }
        completions.clear();
        ep.poll(completions, kInFlight);
        for (const Completion& c : completions) {
            if (c.error) throw FabricError("raw write: " + c.text, c.error);
            done += reinterpret_cast<std::uint64_t>(c.context);
            --in_flight;
        }
    }
}

// Per size the better of one blocking fi_write and the pipelined chunks.
nlohmann::json best_of(const nlohmann::json& single, const nlohmann::json& pipelined)
{
    nlohmann::json out = single;
    for (std::size_t i = 0; i < out["sizes"].size(); ++i) {
        auto& row = out["sizes"][i];
        const auto& p = pipelined["sizes"][i];
        row["single_gbps"] = row["gbps"];
        row["pipelined_gbps"] = p["gbps"];
        if (p["gbps"].get<double>() > row["gbps"].get<double>()) {
            row["gbps"] = p["gbps"];
            row["transfers"] = p["transfers"];
        }
    }
    return out;
}

nlohmann::json measure_raw(int fd, const FabricBenchOptions& o, Memory& source)
{
    FabricEndpoint ep(endpoint_options(o.provider));
    ep.register_memory(source.base, source.size, false);
    std::uint64_t n = 0;
    recv_all(fd, &n, sizeof n);
    FabricAddress address(n);
    recv_all(fd, address.data(), n);
    RemoteRegion region;
    recv_all(fd, &region, sizeof region);
    const std::uint64_t peer = ep.add_peer(address);
    const nlohmann::json single = sweep(o, "raw RMA write", [&](std::uint64_t bytes) {
        ep.write(peer, source.base, bytes, region, 0);
    });
    const nlohmann::json pipelined =
        sweep(o, "raw RMA writes, 1 MiB x 16 in flight",
              [&](std::uint64_t bytes) { pipelined_write(ep, peer, source, bytes, region); });
    send_all(fd, "n", 1);
    return best_of(single, pipelined);
}

nlohmann::json measure_chip(int fd, const FabricBenchOptions& o, Memory& hbm,
                            const std::string& topology)
{
    DomainOptions d;
    d.process = "a";
    d.op_timeout = std::chrono::seconds(60);
    Domain domain(parse_topology(topology), d, {{hbm.base, hbm.size}});
    if (domain.wait_joined(std::chrono::seconds(60)) != DomainState::joined)
        throw std::runtime_error("fabric bench: the two domains did not join: " +
                                 domain.status().error);
    nlohmann::json out = sweep(o, "chip-to-chip write",
                               [&](std::uint64_t bytes) { domain.write(1, 0, hbm.base, bytes); });
    send_all(fd, "d", 1);
    return out;
}

}  // namespace

nlohmann::json measure_fabric(const FabricBenchOptions& o)
{
    if (o.provider != "tcp" && o.provider != "shm")
        throw std::invalid_argument("--provider must be tcp or shm, not \"" + o.provider + "\"");
    const std::string topology = topology_json(o.provider, free_port(), free_port());
    int fds[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) != 0)
        throw std::runtime_error("fabric bench: socketpair failed");
    // Forked before this process opens anything of libfabric's.
    const pid_t child = fork();
    if (child < 0) throw std::runtime_error("fabric bench: fork failed");
    if (child == 0) {
        close(fds[0]);
        far_end(fds[1], o, topology);
    }
    close(fds[1]);
    nlohmann::json raw, chip;
    std::string error;
    try {
        Memory source(*std::max_element(o.sizes.begin(), o.sizes.end()));
        raw = measure_raw(fds[0], o, source);
        chip = measure_chip(fds[0], o, source, topology);
    } catch (const std::exception& e) {
        error = e.what();
    }
    close(fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    if (!error.empty()) throw std::runtime_error(error);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        throw std::runtime_error("fabric bench: the far end failed");
    return {{"raw", raw}, {"chip", chip}};
}

}  // namespace jal::bench
