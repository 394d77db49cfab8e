// The peer-memory tests' view of one chip (a context, a queue and a host buffer on it): bytes
// to and from device addresses, local or a peer's mapping, with each copy's status.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include <jal/jal.hpp>

namespace jal::test {

inline constexpr std::chrono::seconds kSideWait{30};

// A chip's context, queue and host buffer, and copies through them that wait (up to kWait:
// a packet that never completes fails the test, never hangs it).
struct Side {
    Side(jal::runtime::Device& d, size_t host_bytes)
        : dev(d), ctx(d), queue(ctx, 64), host(d, host_bytes)
    {}
    // Copies and waits; the packet's status.
    uint32_t copy(jal_copy_dir dir, uint64_t dst, uint64_t src, uint64_t bytes)
    {
        jal::runtime::Signal done(dev, 1);
        queue.copy(dir, dst, src, bytes, &done);
        const auto r = done.wait_zero(kSideWait);
        if (!r.satisfied) return JAL_STATUS_TIMEOUT;
        return r.status;
    }
    uint32_t to_device(uint64_t va, const std::vector<std::byte>& data)
    {
        std::memcpy(host.data(), data.data(), data.size());
        return copy(JAL_COPY_H2D, va, host.bus_addr(), data.size());
    }
    uint32_t to_host(uint64_t va, size_t bytes)
    {
        std::memset(host.data(), 0, bytes);
        return copy(JAL_COPY_D2H, host.bus_addr(), va, bytes);
    }
    bool host_equals(const std::vector<std::byte>& data) const
    {
        return std::memcmp(host.data(), data.data(), data.size()) == 0;
    }
    jal::runtime::Device& dev;
    jal::runtime::Context ctx;
    jal::runtime::Queue queue;
    jal::runtime::HostBuffer host;
};

}  // namespace jal::test
