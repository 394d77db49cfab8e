// Shared by the runtime integration tests: a jal-emu (native firmware: these tests are
// about the data plane) and the runtime device opened on it.
#pragma once

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <jal/jal.hpp>

#include "fixture/emu_process.hpp"

namespace jal::test {

class RuntimeTest : public EmuTest {
protected:
    EmuOptions emu_options() const override
    {
        EmuOptions o;
        o.extra_args = {"--fw", "native"};
        return o;
    }
    void SetUp() override
    {
        EmuTest::SetUp();
        device = std::make_unique<jal::runtime::Device>(0, emu().socket_dir());
    }
    void TearDown() override
    {
        device.reset();
        EmuTest::TearDown();
    }
    jal::runtime::Device& dev() { return *device; }

    std::unique_ptr<jal::runtime::Device> device;
};

inline std::vector<std::byte> random_bytes(size_t n, uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<std::byte> out(n);
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v = rng();
        std::memcpy(out.data() + i, &v, 8);
    }
    for (; i < n; i++) out[i] = static_cast<std::byte>(rng());
    return out;
}

// First differing byte, or -1.
inline long long first_difference(const std::byte* a, const std::byte* b, size_t n)
{
    auto* x = reinterpret_cast<const unsigned char*>(a);
    auto* y = reinterpret_cast<const unsigned char*>(b);
    for (size_t i = 0; i < n; i++)
        if (x[i] != y[i]) return static_cast<long long>(i);
    return -1;
}

}  // namespace jal::test
