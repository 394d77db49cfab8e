// Shared by the transformer kernel tests: one jal-emu per test suite (native firmware:
// these tests are about the kernels), a context and queue on it, tensors uploaded from and
// downloaded to host vectors, and a dispatch that fails the test with the fault's details.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <jal/hw/queue.h>
#include <jal/jal.hpp>
#include <jal/kernels/builder.hpp>
#include <jal/kernels/dispatch.hpp>
#include <jal/kernels/library/tensor.hpp>

#include "fixture/emu_process.hpp"

namespace jal::test {

// A tensor on the device and the memory that holds it.
struct DeviceTensor {
    std::unique_ptr<jal::runtime::Memory> mem;
    jal::kernels::TensorRef ref;
};

class TransformerKernelTest : public ::testing::Test {
protected:
    static void SetUpTestSuite();
    static void TearDownTestSuite();
    void SetUp() override;     // fails the test when the suite's emulator did not start
    void TearDown() override;  // fails the test if the emulator died meanwhile

    // Logical slices 0..n-1.
    static uint64_t slices(unsigned n) { return n >= 64 ? ~uint64_t{0} : (uint64_t{1} << n) - 1; }

    // rows x cols of dtype, packed unless row_stride is given, on the slices of mask.
    DeviceTensor alloc(uint32_t rows, uint32_t cols, jal_dtype dtype = JAL_DT_F32,
                       uint64_t row_stride = 0, uint64_t mask = 1,
                       jal_placement placement = JAL_PLACE_SLICE);
    DeviceTensor upload(std::span<const float> values, uint32_t rows, uint32_t cols,
                        uint64_t row_stride = 0, uint64_t mask = 1,
                        jal_placement placement = JAL_PLACE_SLICE);
    DeviceTensor upload_i32(std::span<const int32_t> values, uint32_t rows, uint32_t cols);
    void write(uint64_t va, const void* src, size_t bytes);
    void read(void* dst, uint64_t va, size_t bytes);
    std::vector<float> download(const jal::kernels::TensorRef& t);
    std::vector<int32_t> download_i32(const jal::kernels::TensorRef& t);

    // Loads the code object (a Program), runs it through the suite's Launcher on the slices
    // of mask with these argument words and waits. The test fails (with the Launcher's
    // message: fault slice, pc, instruction) unless the dispatch ends with `expect`.
    jal_dispatch_report run(const jal::kernels::CodeObject& code, const std::vector<uint64_t>& args,
                            uint64_t mask, jal_status expect = JAL_STATUS_OK);

    static jal::runtime::Device& device() { return *device_; }
    static jal::runtime::Context& context() { return *context_; }
    static jal::runtime::Queue& queue() { return *queue_; }
    static jal::kernels::Launcher& launcher();

private:
    void copy(jal_copy_dir dir, uint64_t va, void* host, size_t bytes);

    static std::string setup_error_;
    static std::unique_ptr<EmuProcess> emu_;
    static std::unique_ptr<jal::runtime::Device> device_;
    static std::unique_ptr<jal::runtime::Context> context_;
    static std::unique_ptr<jal::runtime::Queue> queue_;
    static std::unique_ptr<jal::kernels::Launcher> launcher_;
};

// Random inputs from a seed.
inline std::vector<float> random_normal(size_t n, uint64_t seed, double sigma = 1.0)
{
    std::mt19937_64 rng(seed);
    std::normal_distribution<double> dist(0.0, sigma);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(dist(rng));
    return v;
}

inline std::vector<float> random_uniform(size_t n, uint64_t seed, double lo, double hi)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> dist(lo, hi);
    std::vector<float> v(n);
    for (float& x : v) x = static_cast<float>(dist(rng));
    return v;
}

// Elementwise |got - want| <= abs_tol + rel_tol * |want|; reports the first few misses.
inline ::testing::AssertionResult all_near(std::span<const float> got, std::span<const double> want,
                                           double abs_tol, double rel_tol)
{
    if (got.size() != want.size())
        return ::testing::AssertionFailure()
               << "sizes differ: " << got.size() << " vs " << want.size();
    size_t bad = 0;
    std::string first;
    double worst = 0;
    for (size_t i = 0; i < got.size(); i++) {
        const double err = std::fabs(static_cast<double>(got[i]) - want[i]);
        const double tol = abs_tol + rel_tol * std::fabs(want[i]);
        worst = std::max(worst, err / tol);
        if (!(err <= tol)) {  // NaN fails too
            if (bad < 5)
                first += "\n  [" + std::to_string(i) + "] got " + std::to_string(got[i]) +
                         " want " + std::to_string(want[i]);
            bad++;
        }
    }
    if (bad)
        return ::testing::AssertionFailure()
               << bad << " of " << got.size() << " elements out of tolerance" << first;
    return ::testing::AssertionSuccess() << "worst error / tolerance " << worst;
}

}  // namespace jal::test
