// RoPE NEOX with YaRN as llama.cpp computes it for GPT-OSS, on a jal-emu, against a
// double-precision reference written here from ggml's formulas (ggml_rope_yarn_corr_dims
// in ggml.c; rope_yarn_ramp, rope_yarn and rotate_pairs in ggml-cpu/ops.cpp).
//
// Tolerances: the tables are the exact values rounded to F32 (2^-24 relative), and the
// chip rounds each product and the sum: |err| <= 1e-5 + 1e-6 |want| for inputs of order 1.
#include <algorithm>
#include <bit>
#include <cmath>
#include <numbers>

#include <jal/kernels/library/rope.hpp>

#include "transformer_fixture.hpp"
#include "transformer_reference.hpp"

namespace jk = jal::kernels;
using jal::test::all_near;

using namespace jal::test::ref;

TEST(TransformerRopeTables, CorrectionRangeIsRoundedToWholeDimensions)
{
    // 64 * ln(4096 / (2 pi 32)) / (2 ln 150000) = 8.09..., with beta 1: 17.4...
    double dims[2];
    jk::yarn_corr_dims(jk::YarnParams{}, dims);
    EXPECT_EQ(dims[0], 8.0);
    EXPECT_EQ(dims[1], 18.0);
}

TEST(TransformerRopeTables, MatchTheFormulasAndCarryMscaleInBothCosAndSin)
{
    const uint32_t n = 5000;
    jk::RopeTables t = jk::rope_yarn_tables(jk::YarnParams{}, n);
    ASSERT_EQ(t.half, 32u);
    ASSERT_EQ(t.cos.size(), size_t{n} * 32);
    // Position 0: cos = mscale, sin = 0 for every pair.
    const double mscale = 1 + 0.1 * std::log(32.0);
    for (uint32_t i = 0; i < 32; i++) {
        EXPECT_FLOAT_EQ(t.cos[i], static_cast<float>(mscale));
        EXPECT_EQ(t.sin[i], 0.0f);
    }
    // Everywhere: the table rotates a unit pair exactly as the reference does.
    for (uint32_t p : {1u, 127u, 4095u, 4999u}) {
        float x[kDims] = {};
        for (uint32_t i = 0; i < 32; i++) x[i] = 1.0f;  // x0 = 1, x1 = 0: y0 = cos, y1 = sin
        double y[kDims];
        rope_head_ref(x, y, p);
        for (uint32_t i = 0; i < 32; i++) {
            EXPECT_NEAR(t.cos[p * 32 + i], y[i], 2e-7) << "p " << p << " i " << i;
            EXPECT_NEAR(t.sin[p * 32 + i], y[i + 32], 2e-7) << "p " << p << " i " << i;
        }
    }
}

class TransformerRopeTest : public jal::test::TransformerKernelTest {
protected:
    void SetUp() override
    {
        TransformerKernelTest::SetUp();
        if (HasFatalFailure()) return;
        tables = jk::rope_yarn_tables(jk::YarnParams{}, kPositions);
        cos_ = upload(tables.cos, kPositions, tables.half, 0, slices(4), JAL_PLACE_REPLICATED);
        sin_ = upload(tables.sin, kPositions, tables.half, 0, slices(4), JAL_PLACE_REPLICATED);
        ref = {.cos_va = cos_.ref.va, .sin_va = sin_.ref.va, .n_positions = kPositions};
    }
    static constexpr uint32_t kPositions = 8192;
    jk::RopeTables tables;
    jal::test::DeviceTensor cos_, sin_;
    jk::RopeTablesRef ref;
};

TEST_F(TransformerRopeTest, QueriesAtArbitraryPositions)
{
    const uint32_t rows = 9, heads = 64;
    const jk::RopeConfig cfg{.n_head = heads, .head_dim = kDims, .block_rows = 2};
    auto x = jal::test::random_normal(size_t{rows} * heads * kDims, 11);
    const std::vector<int32_t> pos = {0, 1, 7, 4095, 4096, 8191, 3, 3, 2500};
    auto dx = upload(x, rows, heads * kDims);
    auto dpos = upload_i32(pos, rows, 1);
    run(jk::build_rope_neox(cfg), jk::rope_neox_args(cfg, dx.ref, dpos.ref, 0, ref), slices(4));
    EXPECT_TRUE(all_near(download(dx.ref), rope_ref(x, rows, heads, pos), 1e-5, 1e-6));
}

TEST_F(TransformerRopeTest, KeysFromAStartPositionInAStridedView)
{
    // K of 8 heads inside a wider fused row (stride 3 KiB), positions 4000..4012.
    const uint32_t rows = 13, heads = 8;
    const jk::RopeConfig cfg{.n_head = heads, .head_dim = kDims, .block_rows = 4};
    auto x = jal::test::random_normal(size_t{rows} * heads * kDims, 12, 2.0);
    auto dx = upload(x, rows, heads * kDims, 3072);
    std::vector<int32_t> pos(rows);
    for (uint32_t r = 0; r < rows; r++) pos[r] = static_cast<int32_t>(4000 + r);
    run(jk::build_rope_neox(cfg), jk::rope_neox_args(cfg, dx.ref, {}, 4000, ref), slices(3));
    EXPECT_TRUE(all_near(download(dx.ref), rope_ref(x, rows, heads, pos), 2e-5, 1e-6));
}

TEST_F(TransformerRopeTest, StartPositionPastTheTablesIsRefused)
{
    const jk::RopeConfig cfg{.n_head = 8, .head_dim = kDims};
    auto dx = alloc(4, 8 * kDims);
    EXPECT_THROW(jk::rope_neox_args(cfg, dx.ref, {}, kPositions - 3, ref), jal::Error);
}

TEST_F(TransformerRopeTest, ByTokensAndByHeadsGiveTheSameBits)
{
    // Blocks with fewer tokens than heads rotate token by token, the others head by head:
    // 12 rows of 4 heads in blocks of 2 (by tokens) and of 6 (by heads).
    const uint32_t rows = 12, heads = 4;
    auto x = jal::test::random_normal(size_t{rows} * heads * kDims, 13);
    std::vector<int32_t> pos(rows);
    for (uint32_t r = 0; r < rows; r++) pos[r] = static_cast<int32_t>(17 * r + 5);
    auto dpos = upload_i32(pos, rows, 1);
    std::vector<std::vector<float>> out;
    for (uint32_t block : {2u, 6u}) {
        const jk::RopeConfig cfg{.n_head = heads, .head_dim = kDims, .block_rows = block};
        auto dx = upload(x, rows, heads * kDims);
        run(jk::build_rope_neox(cfg), jk::rope_neox_args(cfg, dx.ref, dpos.ref, 0, ref), slices(2));
        out.push_back(download(dx.ref));
        EXPECT_TRUE(all_near(out.back(), rope_ref(x, rows, heads, pos), 1e-5, 1e-6));
    }
    ASSERT_EQ(out[0].size(), out[1].size());
    for (size_t i = 0; i < out[0].size(); i++)
        ASSERT_EQ(std::bit_cast<uint32_t>(out[0][i]), std::bit_cast<uint32_t>(out[1][i]))
            << "element " << i;
}
