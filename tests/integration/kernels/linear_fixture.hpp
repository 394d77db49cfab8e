// Shared by the linear kernel tests: a jal-emu (native firmware: the data plane is what is
// tested), a context and queue on it, device buffers filled from and read back to host
// vectors, and kernels run through the Launcher. Also the host side of the references:
// seeded random data and weights in every format, dequantized exactly with jal::numerics.
#pragma once

#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <span>
#include <vector>

#include <gtest/gtest.h>

#include <jal/isa/numerics.hpp>
#include <jal/jal.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/expert_gemm.hpp>
#include <jal/kernels/library/linear.hpp>

#include "fixture/emu_process.hpp"

namespace jal::test {

class LinearKernelTest : public EmuTest {
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
        context = std::make_unique<jal::runtime::Context>(*device);
        queue = std::make_unique<jal::runtime::Queue>(*context, 256);
        launcher = std::make_unique<jal::kernels::Launcher>(*device, *context, *queue);
    }
    void TearDown() override
    {
        launcher.reset();
        memories.clear();
        queue.reset();
        context.reset();
        device.reset();
        EmuTest::TearDown();
    }

    // The first `n` usable logical slices.
    uint64_t slices(uint32_t n)
    {
        uint64_t usable = launcher->usable_slice_mask(), mask = 0;
        for (uint32_t s = 0; s < 64 && n > 0; s++)
            if (usable & (1ull << s)) {
                mask |= 1ull << s;
                n--;
            }
        EXPECT_EQ(n, 0u) << "not enough usable slices";
        return mask;
    }

    // Device memory holding `bytes` (kept until the test ends).
    uint64_t upload(const void* data, size_t bytes, jal_placement placement = JAL_PLACE_INTERLEAVED,
                    uint64_t mask = 0xff)
    {
        memories.push_back(std::make_unique<jal::runtime::Memory>(
            *context, std::max<size_t>(bytes, 64), placement, mask));
        uint64_t va = memories.back()->va();
        write(va, data, bytes);
        return va;
    }
    template <typename T>
    uint64_t upload(const std::vector<T>& v)
    {
        return upload(v.data(), v.size() * sizeof(T));
    }
    // Device memory of `bytes` filled with `fill` (so an untouched output is recognisable).
    uint64_t output(size_t bytes, uint8_t fill = 0xa5)
    {
        std::vector<uint8_t> v(bytes, fill);
        return upload(v.data(), bytes);
    }
    void write(uint64_t va, const void* data, size_t bytes)
    {
        jal::runtime::HostBuffer host(*device, bytes);
        std::memcpy(host.data(), data, bytes);
        jal::runtime::Signal done(*device, 1);
        queue->copy_to_device(va, host, 0, bytes, &done);
        auto r = done.wait_zero(std::chrono::seconds(60));
        ASSERT_TRUE(r.satisfied);
        ASSERT_EQ(r.status, JAL_STATUS_OK);
    }
    std::vector<uint8_t> read(uint64_t va, size_t bytes)
    {
        jal::runtime::HostBuffer host(*device, bytes);
        jal::runtime::Signal done(*device, 1);
        queue->copy_to_host(host, 0, va, bytes, &done);
        auto r = done.wait_zero(std::chrono::seconds(60));
        EXPECT_TRUE(r.satisfied);
        EXPECT_EQ(r.status, JAL_STATUS_OK);
        std::vector<uint8_t> out(bytes);
        std::memcpy(out.data(), host.data(), bytes);
        return out;
    }
    std::vector<float> read_f32(uint64_t va, size_t n)
    {
        auto bytes = read(va, n * 4);
        std::vector<float> out(n);
        std::memcpy(out.data(), bytes.data(), n * 4);
        return out;
    }

    // Runs a kernel on `slice_mask` and returns its report (throws jal::Error on a fault).
    jal_dispatch_report run(const jal::kernels::CodeObject& code,
                            const std::vector<uint64_t>& words, uint64_t slice_mask,
                            bool timing_only = false)
    {
        jal::kernels::Program program(*device, *context, *queue, code);
        jal::kernels::Args args;
        for (uint64_t w : words) args.u64(w);
        jal::kernels::DispatchOptions opts;
        opts.slice_mask = slice_mask;
        opts.timing_only = timing_only;
        return launcher->run(program, args, opts);
    }

    std::unique_ptr<jal::runtime::Device> device;
    std::unique_ptr<jal::runtime::Context> context;
    std::unique_ptr<jal::runtime::Queue> queue;
    std::unique_ptr<jal::kernels::Launcher> launcher;
    std::vector<std::unique_ptr<jal::runtime::Memory>> memories;
};

// Uniform floats in [-scale, scale) from a seed.
inline std::vector<float> random_floats(size_t n, uint64_t seed, float scale = 1.0f)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<float> d(-scale, scale);
    std::vector<float> v(n);
    for (float& f : v) f = d(rng);
    return v;
}

// A matrix of `rows` × `cols` in `dt`: the stored bytes and their exact F32 values.
struct HostMatrix {
    jal_dtype dtype = JAL_DT_F32;
    uint32_t rows = 0, cols = 0;
    size_t row_bytes = 0;
    std::vector<uint8_t> bytes;
    std::vector<float> values;  // dequantized, exactly what the device multiplies

    jal::kernels::TensorRef ref(uint64_t va) const
    {
        return {.va = va, .rows = rows, .cols = cols, .row_stride = 0, .dtype = dtype};
    }
};

// Quantizes F32 rows to `dt` (mode for MXFP4) and decodes them back.
inline HostMatrix quantized(const std::vector<float>& src, uint32_t rows, uint32_t cols,
                            jal_dtype dt, jal_cvt_mode mode = JAL_CVT_OCP)
{
    HostMatrix m;
    m.dtype = dt, m.rows = rows, m.cols = cols;
    m.row_bytes = jal::numerics::row_bytes(dt, cols);
    m.bytes.resize(m.row_bytes * rows);
    m.values.resize(size_t{rows} * cols);
    for (uint32_t r = 0; r < rows; r++) {
        jal::numerics::quantize_row(dt, src.data() + size_t{r} * cols,
                                    m.bytes.data() + r * m.row_bytes, cols, mode);
        jal::numerics::dequantize_row(dt, m.bytes.data() + r * m.row_bytes,
                                      m.values.data() + size_t{r} * cols, cols);
    }
    return m;
}

// W of `c` as a model file stacks it (E·N rows of w.size() / (E·N) bytes), packed for the
// split by rows over `nslices` (pack_expert_rows), as bytes to upload.
inline std::vector<uint8_t> packed_expert_rows(const jal::kernels::linear::ExpertGemmConfig& c,
                                               const std::vector<uint8_t>& w, uint32_t nslices)
{
    const auto packed = jal::kernels::linear::pack_expert_rows(
        c, std::as_bytes(std::span<const uint8_t>(w.data(), w.size())),
        w.size() / (size_t{c.experts} * c.n), nslices);
    std::vector<uint8_t> bytes(packed.size());
    std::memcpy(bytes.data(), packed.data(), packed.size());
    return bytes;
}

}  // namespace jal::test
