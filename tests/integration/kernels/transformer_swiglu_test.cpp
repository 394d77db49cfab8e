// GPT-OSS's SwiGLU and the elementwise helpers on a jal-emu against double-precision
// references (ggml_swiglu_oai: x = min(g, limit), y = clamp(u, -limit, limit),
// out = x / (1 + exp(-alpha x)) * (y + 1)).
//
// Tolerances: the chip's sigmoid is within ~1 ulp, each product and the +1 rounded once:
// |err| <= 1e-6 + 1e-5 |want|. Add and multiply are one F32 rounding: 1e-7 relative.
#include <algorithm>
#include <cmath>

#include <jal/kernels/library/elementwise.hpp>
#include <jal/kernels/library/swiglu.hpp>

#include "transformer_fixture.hpp"

namespace jk = jal::kernels;
using jal::test::all_near;

namespace {

std::vector<double> swiglu_ref(const std::vector<float>& g, const std::vector<float>& u,
                               double alpha, double limit)
{
    std::vector<double> y(g.size());
    for (size_t i = 0; i < g.size(); i++) {
        const double x = std::min<double>(g[i], limit);
        const double v = std::clamp<double>(u[i], -limit, limit);
        y[i] = x / (1 + std::exp(-alpha * x)) * (v + 1);
    }
    return y;
}

}  // namespace

class TransformerSwigluTest : public jal::test::TransformerKernelTest {};

TEST_F(TransformerSwigluTest, SeparateGateAndUpOnBothSidesOfTheLimit)
{
    // sigma 6: many values beyond +-7, so both clamps act.
    const uint32_t rows = 11, cols = 2880;
    const jk::SwigluConfig cfg{.cols = cols, .block_rows = 3};
    auto g = jal::test::random_normal(size_t{rows} * cols, 21, 6.0);
    auto u = jal::test::random_normal(size_t{rows} * cols, 22, 6.0);
    auto dg = upload(g, rows, cols);
    auto du = upload(u, rows, cols);
    auto dout = alloc(rows, cols);
    run(jk::build_swiglu_oai(cfg), jk::swiglu_oai_args(cfg, dg.ref, du.ref, dout.ref), slices(4));
    EXPECT_TRUE(all_near(download(dout.ref), swiglu_ref(g, u, 1.702, 7.0), 1e-6, 1e-5));
}

TEST_F(TransformerSwigluTest, FusedRowGateFirstHalfUpSecondHalfInPlace)
{
    // ggml's fused layout: each row is [gate | up]; the result overwrites the gate half.
    const uint32_t rows = 5, n_ff = 96;
    auto fused = jal::test::random_normal(size_t{rows} * 2 * n_ff, 23, 5.0);
    std::vector<float> g, u;
    for (uint32_t r = 0; r < rows; r++) {
        g.insert(g.end(), fused.begin() + r * 2 * n_ff, fused.begin() + r * 2 * n_ff + n_ff);
        u.insert(u.end(), fused.begin() + r * 2 * n_ff + n_ff, fused.begin() + (r + 1) * 2 * n_ff);
    }
    auto d = upload(fused, rows, 2 * n_ff);
    const jk::TensorRef gate{
        .va = d.ref.va, .rows = rows, .cols = n_ff, .row_stride = 2 * n_ff * 4};
    const jk::TensorRef up{
        .va = d.ref.va + n_ff * 4, .rows = rows, .cols = n_ff, .row_stride = 2 * n_ff * 4};
    const jk::SwigluConfig cfg{.cols = n_ff, .alpha = 1.5f, .limit = 3.0f};
    run(jk::build_swiglu_oai(cfg), jk::swiglu_oai_args(cfg, gate, up, gate), slices(2));
    auto all = download(d.ref);
    std::vector<float> got;
    for (uint32_t r = 0; r < rows; r++)
        got.insert(got.end(), all.begin() + r * 2 * n_ff, all.begin() + r * 2 * n_ff + n_ff);
    EXPECT_TRUE(all_near(got, swiglu_ref(g, u, 1.5, 3.0), 1e-6, 1e-5));
    // the up half is untouched
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t c = 0; c < n_ff; c++)
            ASSERT_EQ(all[r * 2 * n_ff + n_ff + c], u[r * n_ff + c]);
}

TEST_F(TransformerSwigluTest, ResidualAddAndBroadcastRows)
{
    const uint32_t rows = 17, cols = 2880;
    auto a = jal::test::random_normal(size_t{rows} * cols, 24);
    auto b = jal::test::random_normal(size_t{rows} * cols, 25);
    auto bias = jal::test::random_normal(cols, 26);
    auto da = upload(a, rows, cols);
    auto db = upload(b, rows, cols);
    auto dbias = upload(bias, 1, cols);
    auto dout = alloc(rows, cols);

    const jk::ElementwiseConfig add{.op = jk::ElementwiseOp::add, .cols = cols, .block_rows = 8};
    run(jk::build_elementwise(add), jk::elementwise_args(add, da.ref, db.ref, dout.ref), slices(3));
    std::vector<double> want(a.size());
    for (size_t i = 0; i < a.size(); i++) want[i] = double{a[i]} + b[i];
    EXPECT_TRUE(all_near(download(dout.ref), want, 0, 1e-7));

    for (jk::ElementwiseOp op : {jk::ElementwiseOp::add, jk::ElementwiseOp::mul}) {
        const jk::ElementwiseConfig cfg{.op = op, .cols = cols, .broadcast_b = true};
        run(jk::build_elementwise(cfg), jk::elementwise_args(cfg, da.ref, dbias.ref, dout.ref),
            slices(4));
        for (size_t i = 0; i < a.size(); i++)
            want[i] = op == jk::ElementwiseOp::add ? double{a[i]} + bias[i % cols]
                                                   : double{a[i]} * bias[i % cols];
        EXPECT_TRUE(all_near(download(dout.ref), want, 0, 1e-7));
    }
}

TEST_F(TransformerSwigluTest, PlainSwigluOfDeepseekAndLlama)
{
    // ggml_swiglu: silu(g) · u, no clamp and no +1: values far past GPT-OSS's limit pass.
    const uint32_t rows = 7, cols = 160;
    auto g = jal::test::random_normal(size_t{rows} * cols, 27, 9.0);
    auto u = jal::test::random_normal(size_t{rows} * cols, 28, 9.0);
    auto dg = upload(g, rows, cols);
    auto du = upload(u, rows, cols);
    auto dout = alloc(rows, cols);
    const jk::SwigluConfig cfg{.cols = cols, .oai = false, .block_rows = 2};
    run(jk::build_swiglu_oai(cfg), jk::swiglu_oai_args(cfg, dg.ref, du.ref, dout.ref), slices(3));
    std::vector<double> want(g.size());
    for (size_t i = 0; i < g.size(); i++) want[i] = g[i] / (1 + std::exp(-double{g[i]})) * u[i];
    EXPECT_TRUE(all_near(download(dout.ref), want, 1e-6, 1e-5));
}
