// One emulator process's port on the chip-to-chip fabric: a libfabric reliable-datagram
// endpoint (FI_EP_RDM) with tagless messages for control and RMA for bulk data, completions
// read from one completion queue. The provider is the user's choice: "tcp" between hosts
// (libfabric's tcp with its RxM layer), "shm" between processes on one host, or any
// provider name fi_info lists. docs/fabric.md says why libfabric and how chips use it.
//
// Blocking calls poll the completion queue until their operation completes or the
// endpoint's timeout passes (not every provider has wait objects). Failures throw
// FabricError with libfabric's own text. Not thread-safe: one thread drives an endpoint.
//
// Besides the blocking calls, operations can be posted with a context of the caller's
// (post_*) and their completions collected by poll(): what a domain's progress thread does,
// with receive buffers posted ahead and many transfers in flight. An endpoint is driven one
// way or the other: a blocking call would take a posted operation's completion for its own.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct fid_fabric;
struct fid_domain;
struct fid_av;
struct fid_cq;
struct fid_ep;
struct fid_mr;
struct fi_info;

namespace jal::emu::fabric {

class FabricError : public std::runtime_error {
public:
    FabricError(const std::string& what, int fi_errno);
    int fi_errno() const { return errno_; }  // positive FI_E* / errno value

private:
    int errno_;
};

struct EndpointOptions {
    std::string provider = "tcp";  // "tcp", "shm", or a provider name as fi_info prints it
    // Where the endpoint listens (tcp: a host name or address and a port; empty: any).
    std::string node, service;
    std::chrono::milliseconds timeout{10000};  // for each blocking call
    std::size_t completion_queue = 64;         // entries: at least the operations in flight
};

// A peer's address as the provider encodes it (fi_getname), exchanged out of band.
using FabricAddress = std::vector<std::uint8_t>;

// A posted operation's end: its context, the bytes received (recv) and, on failure,
// libfabric's error number and text.
struct Completion {
    void* context = nullptr;
    std::size_t length = 0;
    int error = 0;  // 0: success; else a positive FI_E* / errno value
    std::string text;
};

// Memory a peer may read and write by RMA: what it must know about it.
struct RemoteRegion {
    std::uint64_t addr = 0;  // the address a peer names (virtual, or an offset: the provider's)
    std::uint64_t key = 0;
    std::uint64_t size = 0;
};

class FabricEndpoint {
public:
    explicit FabricEndpoint(const EndpointOptions& options);
    ~FabricEndpoint();
    FabricEndpoint(const FabricEndpoint&) = delete;
    FabricEndpoint& operator=(const FabricEndpoint&) = delete;

    const std::string& provider() const { return provider_; }
    FabricAddress address() const;
    // A peer's handle for the calls below.
    std::uint64_t add_peer(const FabricAddress& address);
    // The same for a peer known by where it listens (tcp: host and port; shm: its name),
    // resolved by the provider.
    std::uint64_t add_peer(const std::string& node, const std::string& service);

    // Registers [base, base+size) for local use and, with `remote`, for peers' RMA. The
    // region stays registered until the endpoint is destroyed.
    RemoteRegion register_memory(void* base, std::size_t size, bool remote);

    // Blocking: returns once the operation completed locally (send, write: the data left
    // the buffer and, on a reliable endpoint, was delivered; read: the data is here).
    void send(std::uint64_t peer, const void* data, std::size_t size);
    std::size_t recv(void* data, std::size_t capacity);
    void write(std::uint64_t peer, const void* local, std::size_t size, const RemoteRegion& remote,
               std::uint64_t offset);
    void read(std::uint64_t peer, void* local, std::size_t size, const RemoteRegion& remote,
              std::uint64_t offset);
    // Lets the provider make progress (peers' RMA into this endpoint's regions needs it on
    // providers without automatic progress) while nothing of this endpoint's is outstanding.
    void progress();

    // Non-blocking: false when the provider is busy (poll, then try again); other failures
    // throw. `context` comes back in the operation's Completion; buffers stay the caller's
    // until then.
    bool post_send(std::uint64_t peer, const void* data, std::size_t size, void* context);
    bool post_recv(void* data, std::size_t capacity, void* context);
    bool post_write(std::uint64_t peer, const void* local, std::size_t size,
                    const RemoteRegion& remote, std::uint64_t offset, void* context);
    bool post_read(std::uint64_t peer, void* local, std::size_t size, const RemoteRegion& remote,
                   std::uint64_t offset, void* context);
    // Appends up to `max` completions (successes and failures) to `out`; returns how many.
    std::size_t poll(std::vector<Completion>& out, std::size_t max = 16);

private:
    struct Registration;
    void close_all();
    void* descriptor(const void* p, std::size_t size);
    void wait_completion(const char* what, std::size_t* received = nullptr);
    template <class Post>
    void post(const char* what, Post&& op);

    std::chrono::milliseconds timeout_;
    std::string provider_;
    fi_info* info_ = nullptr;
    fid_fabric* fabric_ = nullptr;
    fid_domain* domain_ = nullptr;
    fid_av* av_ = nullptr;
    fid_cq* cq_ = nullptr;
    fid_ep* ep_ = nullptr;
    std::vector<std::unique_ptr<Registration>> regions_;
    // Bounce buffer for providers that need local buffers registered (FI_MR_LOCAL).
    std::vector<std::uint8_t> bounce_;
    std::uint64_t mr_mode_ = 0;
};

}  // namespace jal::emu::fabric
