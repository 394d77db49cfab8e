// Rows: sizes, decoding every dtype (against reference_decode.hpp), and quantisation to the
// MX formats (OCP MX v1.0: shared exponent, round to nearest even, saturation), to Q8_0
// and to the ggml MXFP4 rounding.
#include <jal/isa/numerics.hpp>

#include "reference_decode.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace jal::numerics;
using namespace numerics_test;

namespace {

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::vector<uint8_t> v(n);
    for (auto& b : v) b = uint8_t(rng());
    return v;
}

// An MXFP4 block from 32 codes (element j in the low nibble of qs[j], j+16 in the high).
jal_block_mxfp4 mxfp4_block(uint8_t e, const uint8_t codes[32])
{
    jal_block_mxfp4 b{};
    b.e = e;
    for (int j = 0; j < 16; j++) b.qs[j] = uint8_t(codes[j] | (codes[j + 16] << 4));
    return b;
}

uint8_t mxfp4_code(const jal_block_mxfp4& b, int j)
{
    return j < 16 ? b.qs[j] & 0xf : b.qs[j - 16] >> 4;
}

}  // namespace

TEST(NumericsRows, RowBytes)
{
    EXPECT_EQ(40u, row_bytes(JAL_DT_F32, 10));
    EXPECT_EQ(40u, row_bytes(JAL_DT_I32, 10));
    EXPECT_EQ(20u, row_bytes(JAL_DT_BF16, 10));
    EXPECT_EQ(20u, row_bytes(JAL_DT_F16, 10));
    EXPECT_EQ(2u * 17, row_bytes(JAL_DT_MXFP4, 64));
    EXPECT_EQ(3u * 33, row_bytes(JAL_DT_MXFP8_E4M3, 96));
    EXPECT_EQ(33u, row_bytes(JAL_DT_MXFP8_E5M2, 32));
    EXPECT_EQ(2u * 34, row_bytes(JAL_DT_Q8_0, 64));
    EXPECT_EQ(0u, row_bytes(JAL_DT_MXFP4, 33));
    EXPECT_EQ(0u, row_bytes(JAL_DT_Q8_0, 16));
    EXPECT_EQ(0u, row_bytes(jal_dtype(0), 32));
    EXPECT_EQ(0u, row_bytes(jal_dtype(9), 32));
}

TEST(NumericsRows, DequantizeEveryDtypeMatchesBitFieldDecoder)
{
    const jal_dtype dts[] = {JAL_DT_BF16,       JAL_DT_F16,   JAL_DT_MXFP8_E4M3,
                             JAL_DT_MXFP8_E5M2, JAL_DT_MXFP4, JAL_DT_Q8_0};
    const size_t n = 32 * 64;
    for (jal_dtype dt : dts) {
        auto src = random_bytes(row_bytes(dt, n), 100 + dt);
        std::vector<float> got(n);
        dequantize_row(dt, src.data(), got.data(), n);
        auto want = ref_decode_row(dt, src.data(), n);
        if (dt == JAL_DT_MXFP4)
            for (double& w : want)
                w += 0.0;  // the E2M1 code -0 decodes to +0, as ggml's integer kvalues do
        for (size_t i = 0; i < n; i++) {
            if (std::isnan(want[i])) {
                EXPECT_TRUE(std::isnan(got[i])) << dt << " " << i;
            } else {
                EXPECT_EQ(bits_of(float(want[i])), bits_of(got[i]))
                    << "dtype " << dt << " element " << i;
            }
        }
    }
    int32_t ints[4] = {0, -7, 16777217, INT32_MIN};
    float f[4];
    dequantize_row(JAL_DT_I32, ints, f, 4);
    EXPECT_EQ(0.0f, f[0]);
    EXPECT_EQ(-7.0f, f[1]);
    EXPECT_EQ(16777216.0f, f[2]);  // nearest even
    EXPECT_EQ(-2147483648.0f, f[3]);
}

TEST(NumericsRows, MxfpQuantizeOcpRoundTripsRepresentableBlocks)
{
    // A block whose largest element lies in the element format's top binade keeps its scale,
    // so quantising its decoded values must give the same bytes back.
    std::mt19937 rng(7);
    for (int iter = 0; iter < 500; iter++) {
        uint8_t codes[32];
        for (auto& c : codes) {
            c = uint8_t(rng() & 0xf);
            if (c == 8) c = 0;  // -0 decodes to +0 (docs/numerics.md), so it cannot round-trip
        }
        codes[rng() % 32] = uint8_t(6 + (rng() & 1) + (rng() & 8));  // a +-4 or +-6
        jal_block_mxfp4 b = mxfp4_block(uint8_t(1 + rng() % 250), codes);
        float x[32];
        dequantize_row(JAL_DT_MXFP4, &b, x, 32);
        jal_block_mxfp4 q{};
        quantize_row(JAL_DT_MXFP4, x, &q, 32, JAL_CVT_OCP);
        ASSERT_EQ(0, std::memcmp(&b, &q, sizeof b)) << "iteration " << iter;
    }
    for (jal_dtype dt : {JAL_DT_MXFP8_E4M3, JAL_DT_MXFP8_E5M2}) {
        for (int iter = 0; iter < 300; iter++) {
            jal_block_mxfp8 b{};
            b.e = uint8_t(20 + rng() % 200);
            for (auto& c : b.q) {
                c = uint8_t(rng());
                double v = dt == JAL_DT_MXFP8_E4M3 ? ref_e4m3(c) : ref_e5m2(c);
                if (std::isnan(v) || std::isinf(v)) c = 0;
            }
            // top binade: E4M3 exponent field 15 (256..448), E5M2 field 30 (32768..57344)
            b.q[rng() % 32] =
                dt == JAL_DT_MXFP8_E4M3 ? uint8_t(0x78 | (rng() % 7)) : uint8_t(0x78 | (rng() % 4));
            float x[32];
            dequantize_row(dt, &b, x, 32);
            jal_block_mxfp8 q{};
            quantize_row(dt, x, &q, 32, JAL_CVT_OCP);
            ASSERT_EQ(0, std::memcmp(&b, &q, sizeof b)) << "dtype " << dt << " iteration " << iter;
        }
    }
}

TEST(NumericsRows, MxfpQuantizeOcpScaleTiesAndSaturation)
{
    float x[32] = {};
    // amax 6: floor(log2 6) - 2 = 0, scale 2^0 (e = 127)
    const float in[] = {6.0f, 2.5f, 3.5f, 5.0f, 0.25f, 0.75f, 1.25f, 1.75f, -2.5f, -5.0f, 0.1f};
    const uint8_t want[] = {0x7, 0x4, 0x6, 0x6, 0x0, 0x2, 0x2, 0x4, 0xc, 0xe, 0x0};
    std::memcpy(x, in, sizeof in);
    jal_block_mxfp4 q{};
    quantize_row(JAL_DT_MXFP4, x, &q, 32, JAL_CVT_OCP);
    EXPECT_EQ(127, q.e);
    for (size_t j = 0; j < sizeof want; j++)
        EXPECT_EQ(want[j], mxfp4_code(q, int(j))) << "element " << j << " = " << in[j];
    // amax 7.5: same exponent (floor(log2 7.5) = 2), 7.5 saturates to 6
    x[0] = 7.5f;
    quantize_row(JAL_DT_MXFP4, x, &q, 32, JAL_CVT_OCP);
    EXPECT_EQ(127, q.e);
    EXPECT_EQ(0x7, mxfp4_code(q, 0));
    // amax 0.75 * 2^-3: X = floor(log2 0.09375) - 2 = -6
    float y[32] = {};
    y[5] = -0.09375f;
    y[6] = 0.01171875f;  // 0.75 * 2^-6 -> tie between 0.5 and 1 (units of 2^-6): 1
    quantize_row(JAL_DT_MXFP4, y, &q, 32, JAL_CVT_OCP);
    EXPECT_EQ(127 - 6, q.e);
    EXPECT_EQ(0xf, mxfp4_code(q, 5));  // -6 * 2^-6 = -0.09375
    EXPECT_EQ(0x2, mxfp4_code(q, 6));
    // all zero: scale code 0, zero elements
    float z[32] = {};
    quantize_row(JAL_DT_MXFP4, z, &q, 32, JAL_CVT_OCP);
    EXPECT_EQ(0, q.e);
    for (int j = 0; j < 32; j++) EXPECT_EQ(0, mxfp4_code(q, j));
    // a NaN or an infinity makes the scale NaN
    z[3] = NAN;
    quantize_row(JAL_DT_MXFP4, z, &q, 32, JAL_CVT_OCP);
    EXPECT_EQ(0xff, q.e);
    z[3] = -INFINITY;
    jal_block_mxfp8 q8{};
    quantize_row(JAL_DT_MXFP8_E4M3, z, &q8, 32, JAL_CVT_OCP);
    EXPECT_EQ(0xff, q8.e);
    // tiny values: the exponent clamps at e = 0 (2^-127) and elements round
    float t[32] = {};
    t[0] = 0x1p-140f;
    t[1] = 0x1p-128f;
    quantize_row(JAL_DT_MXFP4, t, &q, 32, JAL_CVT_OCP);
    EXPECT_EQ(0, q.e);
    EXPECT_EQ(0x0, mxfp4_code(q, 0));
    EXPECT_EQ(0x1, mxfp4_code(q, 1));  // 2^-128 = 0.5 * 2^-127
    // E4M3: amax 500 -> scale 2^0 (floor(log2 500) - 8 = 0), 500 saturates to 448
    float w[32] = {};
    w[0] = 500.0f;
    w[1] = 17.0f;  // 16 | 18: 16 is even
    quantize_row(JAL_DT_MXFP8_E4M3, w, &q8, 32, JAL_CVT_OCP);
    EXPECT_EQ(127, q8.e);
    EXPECT_EQ(0x7e, q8.q[0]);
    EXPECT_EQ(0x58, q8.q[1]);  // 16 = 2^4: exponent field 11, mantissa 0
}

TEST(NumericsRows, MxfpQuantizeGgmlTiesToLowerCode)
{
    float x[32] = {};
    const float in[] = {6.0f, 3.5f, -3.5f, 2.5f, 5.0f, 0.25f, -0.25f, 7.0f};
    // ggml: d = 2^(e-128) with e = floor(log2 6) - 2 + 127 = 127; nearest, ties to the lower index
    const uint8_t want[] = {0x7, 0x5, 0xd, 0x4, 0x6, 0x0, 0x0, 0x7};
    std::memcpy(x, in, sizeof in);
    jal_block_mxfp4 q{};
    quantize_row(JAL_DT_MXFP4, x, &q, 32, JAL_CVT_GGML);
    EXPECT_EQ(127, q.e);
    for (size_t j = 0; j < sizeof want; j++)
        EXPECT_EQ(want[j], mxfp4_code(q, int(j))) << "element " << j << " = " << in[j];
    // OCP rounds 3.5 to even (4), which is where the two modes differ
    quantize_row(JAL_DT_MXFP4, x, &q, 32, JAL_CVT_OCP);
    EXPECT_EQ(0x6, mxfp4_code(q, 1));
    // all zero: ggml writes e = 0 as well
    float z[32] = {};
    quantize_row(JAL_DT_MXFP4, z, &q, 32, JAL_CVT_GGML);
    EXPECT_EQ(0, q.e);
}

TEST(NumericsRows, Q8_0QuantizeScaleAndElements)
{
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 2.0f);
    float x[64];
    for (auto& v : x) v = nd(rng);
    jal_block_q8_0 q[2];
    quantize_row(JAL_DT_Q8_0, x, q, 64, JAL_CVT_OCP);
    for (int b = 0; b < 2; b++) {
        double amax = 0;
        for (int j = 0; j < 32; j++) amax = std::max(amax, double(std::fabs(x[b * 32 + j])));
        EXPECT_EQ(f32_to_f16(float(amax / 127.0)), q[b].d);
        for (int j = 0; j < 32; j++) {
            double exact = x[b * 32 + j] / (amax / 127.0);
            EXPECT_LE(std::fabs(q[b].qs[j] - exact), 0.5 + 1e-5) << j;
        }
    }
    // amax 127 makes d = 1 exactly: roundf's ties go away from zero
    float t[32] = {127.0f, 2.5f, -2.5f, 0.49999997f, -126.5f, 0.5f, -0.5f, 3.4999998f};
    const int8_t want_t[8] = {127, 3, -3, 0, -127, 1, -1, 3};
    quantize_row(JAL_DT_Q8_0, t, q, 32, JAL_CVT_OCP);
    EXPECT_EQ(0x3c00, q[0].d);
    for (int j = 0; j < 8; j++) EXPECT_EQ(want_t[j], q[0].qs[j]) << t[j];
    float z[32] = {};
    quantize_row(JAL_DT_Q8_0, z, q, 32, JAL_CVT_OCP);
    EXPECT_EQ(0, q[0].d);
    for (int j = 0; j < 32; j++) EXPECT_EQ(0, q[0].qs[j]);
}

TEST(NumericsRows, HalfFormatsAndI32)
{
    const float in[5] = {1.0f + 0x1p-11f, -65520.0f, 3.0f, 0x1p-25f, -0.0f};
    uint16_t h[5];
    quantize_row(JAL_DT_F16, in, h, 5, JAL_CVT_OCP);
    const uint16_t want_h[5] = {0x3c00, 0xfc00, 0x4200, 0x0000, 0x8000};
    for (int i = 0; i < 5; i++) EXPECT_EQ(want_h[i], h[i]) << i;
    quantize_row(JAL_DT_BF16, in, h, 5, JAL_CVT_OCP);
    EXPECT_EQ(0x3f80, h[0]);
    EXPECT_EQ(0x4040, h[2]);
    const float fi[6] = {-3.5f, 2.5f, NAN, 3e9f, -3e9f, 7.0f};
    int32_t out[6];
    quantize_row(JAL_DT_I32, fi, out, 6, JAL_CVT_OCP);
    const int32_t want_i[6] = {-4, 2, 0, INT32_MAX, INT32_MIN, 7};
    for (int i = 0; i < 6; i++) EXPECT_EQ(want_i[i], out[i]) << i;
}
