// RMSNorm and softmax (with and without sinks) on a jal-emu against double-precision host
// references written from the formulas (llama.cpp's ggml_rms_norm + ggml_mul, and
// ggml_soft_max_ext with sinks).
//
// Tolerances: RMSNorm computes the sum of squares in F32 in column order (relative error
// up to about cols * 2^-24 in the worst case, ~1e-5 typical for cols = 2880) and rsqrt to
// one ulp: |err| <= 1e-6 + 1e-4 |want|. Softmax: exp within 2 ulp, a sum of cols F32 terms
// and one reciprocal: |err| <= 1e-9 + 2e-5 |want|.
#include <algorithm>
#include <cmath>

#include <jal/kernels/library/norm.hpp>
#include <jal/kernels/library/softmax.hpp>

#include "transformer_fixture.hpp"

namespace jk = jal::kernels;
using jal::test::all_near;

namespace {

std::vector<double> rms_norm_ref(const std::vector<float>& x, const std::vector<float>& w,
                                 uint32_t rows, uint32_t cols, double eps)
{
    std::vector<double> y(x.size());
    for (uint32_t r = 0; r < rows; r++) {
        double ss = 0;
        for (uint32_t c = 0; c < cols; c++) ss += double{x[r * cols + c]} * x[r * cols + c];
        const double scale = 1.0 / std::sqrt(ss / cols + eps);
        for (uint32_t c = 0; c < cols; c++) y[r * cols + c] = x[r * cols + c] * scale * w[c];
    }
    return y;
}

// sink_of(r) < 0: no sink for that row.
std::vector<double> softmax_ref(const std::vector<float>& x, uint32_t rows, uint32_t cols,
                                double scale, const std::vector<float>& sinks,
                                uint32_t rows_per_sink)
{
    std::vector<double> y(x.size());
    for (uint32_t r = 0; r < rows; r++) {
        double m = -INFINITY;
        for (uint32_t c = 0; c < cols; c++) m = std::max(m, x[r * cols + c] * scale);
        double sink = -INFINITY;
        if (!sinks.empty()) {
            sink = sinks[(r / rows_per_sink) % sinks.size()];
            m = std::max(m, sink);
        }
        double sum = sinks.empty() ? 0.0 : std::exp(sink - m);
        for (uint32_t c = 0; c < cols; c++) sum += std::exp(x[r * cols + c] * scale - m);
        for (uint32_t c = 0; c < cols; c++)
            y[r * cols + c] = std::exp(x[r * cols + c] * scale - m) / sum;
    }
    return y;
}

}  // namespace

class TransformerNormTest : public jal::test::TransformerKernelTest {};

TEST_F(TransformerNormTest, RmsNormGptOssWidthAcrossSlices)
{
    const uint32_t rows = 19, cols = 2880;
    const jk::RmsNormConfig cfg{.cols = cols, .eps = 1e-5f, .block_rows = 4};
    auto x = jal::test::random_normal(rows * cols, 1, 3.0);
    auto w = jal::test::random_uniform(cols, 2, 0.5, 1.5);
    auto dx = upload(x, rows, cols);
    auto dw = upload(w, 1, cols);
    auto dout = alloc(rows, cols);
    // 4 slices: 5 + 5 + 5 + 4 rows, each in blocks of 4 (a tail block in every slice)
    run(jk::build_rms_norm(cfg), jk::rms_norm_args(cfg, dx.ref, dw.ref, dout.ref), slices(4));
    EXPECT_TRUE(all_near(download(dout.ref), rms_norm_ref(x, w, rows, cols, 1e-5), 1e-6, 1e-4));
}

TEST_F(TransformerNormTest, RmsNormInPlaceWithStridedRowsAndTinyValues)
{
    // Rows 1 KiB apart (a view into a wider tensor), values so small that eps matters.
    const uint32_t rows = 7, cols = 64;
    const jk::RmsNormConfig cfg{.cols = cols, .eps = 1e-5f};
    auto x = jal::test::random_normal(rows * cols, 3, 1e-3);
    auto w = jal::test::random_normal(cols, 4);
    auto dx = upload(x, rows, cols, 1024);
    auto dw = upload(w, 1, cols);
    run(jk::build_rms_norm(cfg), jk::rms_norm_args(cfg, dx.ref, dw.ref, dx.ref), slices(3));
    EXPECT_TRUE(all_near(download(dx.ref), rms_norm_ref(x, w, rows, cols, 1e-5), 1e-6, 1e-4));
}

TEST_F(TransformerNormTest, SoftmaxWithoutSinks)
{
    const uint32_t rows = 33, cols = 100;
    const jk::SoftmaxConfig cfg{.cols = cols, .scale = 0.125f, .block_rows = 8};
    auto x = jal::test::random_normal(rows * cols, 5, 8.0);
    auto dx = upload(x, rows, cols);
    auto dout = alloc(rows, cols);
    run(jk::build_softmax(cfg), jk::softmax_args(cfg, dx.ref, dout.ref), slices(2));
    EXPECT_TRUE(all_near(download(dout.ref), softmax_ref(x, rows, cols, 0.125, {}, 1), 1e-9, 2e-5));
}

TEST_F(TransformerNormTest, SoftmaxWithSinksTokenMajorAndHeadMajor)
{
    // 4 heads x 6 tokens; sinks both above and below the row maxima.
    const uint32_t heads = 4, tokens = 6, rows = heads * tokens, cols = 40;
    const std::vector<float> sinks = {-2.0f, 0.5f, 3.0f, 9.0f};
    auto x = jal::test::random_normal(rows * cols, 6, 2.0);
    auto dx = upload(x, rows, cols);
    auto ds = upload(sinks, 1, heads);
    const jk::SoftmaxConfig cfg{.cols = cols, .sinks = true, .block_rows = 5};
    for (uint32_t rows_per_sink : {1u, tokens}) {  // token-major (row = t*heads + h), head-major
        SCOPED_TRACE(rows_per_sink);
        auto dout = alloc(rows, cols);
        run(jk::build_softmax(cfg), jk::softmax_args(cfg, dx.ref, dout.ref, ds.ref, rows_per_sink),
            slices(3));
        EXPECT_TRUE(all_near(download(dout.ref),
                             softmax_ref(x, rows, cols, 1.0, sinks, rows_per_sink), 1e-9, 2e-5));
    }
}

TEST_F(TransformerNormTest, SoftmaxKeepsMaskedColumnsAtZero)
{
    // -inf logits (a mask) get weight 0; with a sink a fully masked row is all zeros.
    const uint32_t rows = 3, cols = 8;
    std::vector<float> x = jal::test::random_normal(rows * cols, 7);
    for (uint32_t c = 0; c < cols; c++) {
        if (c % 3 == 0) x[c] = -INFINITY;
        x[2 * cols + c] = -INFINITY;
    }
    const std::vector<float> sinks = {0.25f};
    const jk::SoftmaxConfig cfg{.cols = cols, .sinks = true};
    auto dx = upload(x, rows, cols);
    auto ds = upload(sinks, 1, 1);
    run(jk::build_softmax(cfg), jk::softmax_args(cfg, dx.ref, dx.ref, ds.ref, 1), slices(1));
    auto got = download(dx.ref);
    EXPECT_TRUE(all_near(got, softmax_ref(x, rows, cols, 1.0, sinks, 1), 1e-9, 2e-5));
    for (uint32_t c = 0; c < cols; c++) EXPECT_EQ(got[2 * cols + c], 0.0f);
}
