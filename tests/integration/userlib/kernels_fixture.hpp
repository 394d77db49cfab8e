// Shared by the kernel dispatch tests (kernels_dispatch_test.cpp, kernels_stages_test.cpp):
// a context and queue on the runtime fixture's device, an output buffer with a host copy,
// and two small kernels whose results show which slices ran them, in which order, with which
// arguments.
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include <jal/jal.hpp>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>

#include "runtime_fixture.hpp"

namespace jal::test {

class KernelsTest : public RuntimeTest {
protected:
    void SetUp() override
    {
        RuntimeTest::SetUp();
        context = std::make_unique<jal::runtime::Context>(dev());
        queue = std::make_unique<jal::runtime::Queue>(*context, 64);
        out = std::make_unique<jal::runtime::Memory>(*context, 4096, JAL_PLACE_SLICE, 1);
        host = std::make_unique<jal::runtime::HostBuffer>(dev(), 4096);
    }
    void TearDown() override
    {
        host.reset();
        out.reset();
        queue.reset();
        context.reset();
        RuntimeTest::TearDown();
    }

    // The first `words` 64-bit words of `out`, copied back to the host.
    std::vector<uint64_t> read_out(size_t words)
    {
        jal::runtime::Signal done(dev(), 1);
        queue->copy_to_host(*host, 0, out->va(), words * 8, &done);
        EXPECT_EQ(done.wait_zero().status, JAL_STATUS_OK);
        std::vector<uint64_t> v(words);
        std::memcpy(v.data(), host->data(), words * 8);
        return v;
    }

    // *out = *out * 10 + digit (on every slice of the dispatch).
    static jal::kernels::CodeObject append_digit_kernel()
    {
        jal::kernels::Builder b("append_digit");
        jal::kernels::X dst = b.arg("out", JAL_ARG_ADDRESS);
        jal::kernels::X digit = b.arg("digit");
        jal::kernels::X acc = b.x();
        b.ld(acc, dst, 0);
        b.muli(acc, acc, 10);
        b.add(acc, acc, digit);
        b.st(acc, dst, 0);
        return b.finish();
    }

    std::unique_ptr<jal::runtime::Context> context;
    std::unique_ptr<jal::runtime::Queue> queue;
    std::unique_ptr<jal::runtime::Memory> out;
    std::unique_ptr<jal::runtime::HostBuffer> host;
};

}  // namespace jal::test
