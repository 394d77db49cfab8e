// One chip of a collectives test as a rank: its device, context, queue and a host buffer,
// with blocking copies in and out of device memory. Shared by the tray and domain tests.
#pragma once

#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jal/jal.hpp>

namespace jal::test {

// A collective or copy that never completes fails the test, never hangs it.
inline constexpr auto kCollectiveWait = std::chrono::seconds(120);

struct RankChip {
    RankChip(unsigned index, const std::string& dir)
        : dev(index, dir), ctx(dev), queue(ctx, 1024), host(dev, 4 << 20)
    {}
    runtime::Device dev;
    runtime::Context ctx;
    runtime::Queue queue;
    runtime::HostBuffer host;

    uint32_t copy(jal_copy_dir dir, uint64_t dst, uint64_t src, uint64_t n)
    {
        runtime::Signal done(dev, 1);
        queue.copy(dir, dst, src, n, &done);
        const auto r = done.wait_zero(kCollectiveWait);
        return r.satisfied ? uint32_t{r.status} : uint32_t{JAL_STATUS_TIMEOUT};
    }
    void put(const runtime::Memory& m, const std::vector<std::byte>& data)
    {
        std::memcpy(host.data(), data.data(), data.size());
        ASSERT_EQ(copy(JAL_COPY_H2D, m.va(), host.bus_addr(), data.size()),
                  uint32_t{JAL_STATUS_OK});
    }
    std::vector<std::byte> get(const runtime::Memory& m, size_t bytes)
    {
        std::vector<std::byte> out(bytes);
        EXPECT_EQ(copy(JAL_COPY_D2H, host.bus_addr(), m.va(), bytes), uint32_t{JAL_STATUS_OK});
        std::memcpy(out.data(), host.data(), bytes);
        return out;
    }
};

// The status a signal completed with, or TIMEOUT if it did not within kCollectiveWait.
inline uint32_t completion(const runtime::Signal& s)
{
    const auto r = s.wait_zero(kCollectiveWait);
    return r.satisfied ? uint32_t{r.status} : uint32_t{JAL_STATUS_TIMEOUT};
}

}  // namespace jal::test
