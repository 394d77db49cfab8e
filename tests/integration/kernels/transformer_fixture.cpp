#include "transformer_fixture.hpp"

#include <chrono>
#include <cstring>

#include <jal/error.hpp>

namespace jal::test {

std::string TransformerKernelTest::setup_error_;
std::unique_ptr<EmuProcess> TransformerKernelTest::emu_;
std::unique_ptr<jal::runtime::Device> TransformerKernelTest::device_;
std::unique_ptr<jal::runtime::Context> TransformerKernelTest::context_;
std::unique_ptr<jal::runtime::Queue> TransformerKernelTest::queue_;
std::unique_ptr<jal::kernels::Launcher> TransformerKernelTest::launcher_;

void TransformerKernelTest::SetUpTestSuite()
{
    setup_error_.clear();
    try {
        EmuOptions o;
        o.extra_args = {"--fw", "native"};
        emu_ = std::make_unique<EmuProcess>(o);
        device_ = std::make_unique<jal::runtime::Device>(0, emu_->socket_dir());
        context_ = std::make_unique<jal::runtime::Context>(*device_);
        queue_ = std::make_unique<jal::runtime::Queue>(*context_);
    } catch (const std::exception& e) {
        setup_error_ = e.what();
        if (emu_) setup_error_ += "\n" + emu_->output();
        TearDownTestSuite();
    }
}

void TransformerKernelTest::TearDownTestSuite()
{
    launcher_.reset();
    queue_.reset();
    context_.reset();
    device_.reset();
    if (emu_) {
        std::string how = emu_->stop();
        if (!how.empty())
            ADD_FAILURE() << "jal-emu did not shut down cleanly: " << how << "\n" << emu_->output();
        emu_.reset();
    }
}

void TransformerKernelTest::SetUp()
{
    if (!device_) GTEST_FAIL() << "the emulator did not start: " << setup_error_;
}

void TransformerKernelTest::TearDown()
{
    if (emu_ && !emu_->running())
        ADD_FAILURE() << "jal-emu exited during the test:\n" << emu_->output();
}

DeviceTensor TransformerKernelTest::alloc(uint32_t rows, uint32_t cols, jal_dtype dtype,
                                          uint64_t row_stride, uint64_t mask,
                                          jal_placement placement)
{
    const uint64_t elem = dtype == JAL_DT_BF16 || dtype == JAL_DT_F16 ? 2 : 4;
    const uint64_t stride = row_stride ? row_stride : cols * elem;
    DeviceTensor t;
    t.mem = std::make_unique<jal::runtime::Memory>(*context_, std::max<uint64_t>(stride * rows, 64),
                                                   placement, mask);
    t.ref = {
        .va = t.mem->va(), .rows = rows, .cols = cols, .row_stride = row_stride, .dtype = dtype};
    return t;
}

void TransformerKernelTest::copy(jal_copy_dir dir, uint64_t va, void* host, size_t bytes)
{
    jal::runtime::HostBuffer buf(*device_, bytes);
    if (dir == JAL_COPY_H2D) std::memcpy(buf.data(), host, bytes);
    jal::runtime::Signal done(*device_, 1);
    if (dir == JAL_COPY_H2D)
        queue_->copy_to_device(va, buf, 0, bytes, &done);
    else
        queue_->copy_to_host(buf, 0, va, bytes, &done);
    auto r = done.wait_zero(std::chrono::seconds(60));
    if (!r.satisfied || r.status != JAL_STATUS_OK)
        throw jal::Error(r.satisfied ? r.status : JAL_STATUS_TIMEOUT, "test copy failed");
    if (dir == JAL_COPY_D2H) std::memcpy(host, buf.data(), bytes);
}

void TransformerKernelTest::write(uint64_t va, const void* src, size_t bytes)
{
    copy(JAL_COPY_H2D, va, const_cast<void*>(src), bytes);
}

void TransformerKernelTest::read(void* dst, uint64_t va, size_t bytes)
{
    copy(JAL_COPY_D2H, va, dst, bytes);
}

DeviceTensor TransformerKernelTest::upload(std::span<const float> values, uint32_t rows,
                                           uint32_t cols, uint64_t row_stride, uint64_t mask,
                                           jal_placement placement)
{
    DeviceTensor t = alloc(rows, cols, JAL_DT_F32, row_stride, mask, placement);
    const uint64_t stride = row_stride ? row_stride : cols * 4ull;
    std::vector<uint8_t> bytes(stride * rows, 0xee);  // padding: a recognisable garbage
    for (uint32_t r = 0; r < rows; r++)
        std::memcpy(bytes.data() + r * stride, values.data() + size_t{r} * cols, cols * 4ull);
    write(t.ref.va, bytes.data(), bytes.size());
    return t;
}

DeviceTensor TransformerKernelTest::upload_i32(std::span<const int32_t> values, uint32_t rows,
                                               uint32_t cols)
{
    DeviceTensor t = alloc(rows, cols, JAL_DT_I32);
    write(t.ref.va, values.data(), size_t{rows} * cols * 4);
    return t;
}

std::vector<float> TransformerKernelTest::download(const jal::kernels::TensorRef& t)
{
    const uint64_t stride = t.row_stride ? t.row_stride : t.cols * 4ull;
    std::vector<uint8_t> bytes(stride * t.rows);
    read(bytes.data(), t.va, bytes.size());
    std::vector<float> out(size_t{t.rows} * t.cols);
    for (uint32_t r = 0; r < t.rows; r++)
        std::memcpy(out.data() + size_t{r} * t.cols, bytes.data() + r * stride, t.cols * 4ull);
    return out;
}

std::vector<int32_t> TransformerKernelTest::download_i32(const jal::kernels::TensorRef& t)
{
    std::vector<int32_t> out(size_t{t.rows} * t.cols);
    read(out.data(), t.va, out.size() * 4);
    return out;
}

jal_dispatch_report TransformerKernelTest::run(const jal::kernels::CodeObject& code,
                                               const std::vector<uint64_t>& args, uint64_t mask,
                                               jal_status expect)
{
    jal::kernels::Program program(*device_, *context_, *queue_, code);
    jal::kernels::Args a;
    for (uint64_t w : args) a.u64(w);
    jal_dispatch_report rep{};
    try {
        rep = launcher().run(program, a, {.slice_mask = mask});
        EXPECT_EQ(expect, JAL_STATUS_OK) << code.name << ": the dispatch succeeded";
    } catch (const jal::Error& e) {
        EXPECT_EQ(e.status(), expect) << e.what();
        if (queue_->status().errors) queue_->reset();
    }
    return rep;
}

jal::kernels::Launcher& TransformerKernelTest::launcher()
{
    if (!launcher_)
        launcher_ = std::make_unique<jal::kernels::Launcher>(*device_, *context_, *queue_);
    return *launcher_;
}

}  // namespace jal::test
