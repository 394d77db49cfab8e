// The scalar element formats against hand tables from OCP MX v1.0 and IEEE 754, and
// against decoders written here from the bit fields (reference_decode.hpp).
#include <jal/isa/numerics.hpp>

#include "reference_decode.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace jal::numerics;
using namespace numerics_test;

namespace {

void expect_same_value(double want, float got, const char* what, unsigned code)
{
    if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(got)) << what << " code " << code;
    } else {
        EXPECT_EQ(bits_of(float(want)), bits_of(got))
            << what << " code " << code << " want " << want << " got " << got;
    }
}

// Checks that code is the round-to-nearest-even choice for x among all codes of a format
// (decode gives each code's value, mant_lsb tells whether a code's mantissa is odd).
template <typename Decode>
void expect_nearest_even(double x, unsigned code, unsigned ncodes, Decode decode,
                         unsigned mant_lsb_mask, const char* what)
{
    double got = decode(code);
    ASSERT_FALSE(std::isnan(got)) << what << " x=" << x;
    double err = std::fabs(got - x);
    for (unsigned c = 0; c < ncodes; c++) {
        double v = decode(c);
        if (std::isnan(v) || std::isinf(v)) continue;
        double e = std::fabs(v - x);
        if (e < err) {
            ADD_FAILURE() << what << " x=" << x << " chose " << code << " but " << c
                          << " is closer";
            return;
        }
        if (e == err && v != got && (code & mant_lsb_mask) != 0) {
            ADD_FAILURE() << what << " tie at x=" << x << " must go to the even code, not " << code;
            return;
        }
    }
}

}  // namespace

TEST(NumericsFormats, E2M1AllSixteenCodes)
{
    // OCP MX v1.0, table of FP4 E2M1 values
    const float want[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                            -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
    for (unsigned c = 0; c < 16; c++) {
        EXPECT_EQ(bits_of(want[c]), bits_of(fp4_e2m1_to_f32(uint8_t(c)))) << c;
        EXPECT_EQ(double(want[c]), ref_e2m1(uint8_t(c))) << c;
    }
}

TEST(NumericsFormats, E4M3AllCodesAgainstBitFields)
{
    for (unsigned c = 0; c < 256; c++)
        expect_same_value(ref_e4m3(uint8_t(c)), fp8_e4m3_to_f32(uint8_t(c)), "e4m3", c);
    EXPECT_EQ(448.0f, fp8_e4m3_to_f32(0x7e));
    EXPECT_EQ(-448.0f, fp8_e4m3_to_f32(0xfe));
    EXPECT_EQ(0x1p-6f, fp8_e4m3_to_f32(0x08));  // smallest normal
    EXPECT_EQ(0x1p-9f, fp8_e4m3_to_f32(0x01));  // smallest subnormal
    EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0x7f)));
    EXPECT_TRUE(std::isnan(fp8_e4m3_to_f32(0xff)));
    EXPECT_EQ(0x80000000u, bits_of(fp8_e4m3_to_f32(0x80)));
}

TEST(NumericsFormats, E5M2AllCodesAgainstBitFields)
{
    for (unsigned c = 0; c < 256; c++)
        expect_same_value(ref_e5m2(uint8_t(c)), fp8_e5m2_to_f32(uint8_t(c)), "e5m2", c);
    EXPECT_EQ(57344.0f, fp8_e5m2_to_f32(0x7b));
    EXPECT_EQ(INFINITY, fp8_e5m2_to_f32(0x7c));
    EXPECT_EQ(-INFINITY, fp8_e5m2_to_f32(0xfc));
    EXPECT_TRUE(std::isnan(fp8_e5m2_to_f32(0x7d)));
    EXPECT_EQ(0x1p-16f, fp8_e5m2_to_f32(0x01));
}

TEST(NumericsFormats, E8M0Extremes)
{
    EXPECT_EQ(0x00400000u, bits_of(e8m0_to_f32(0)));  // 2^-127 is an F32 subnormal
    EXPECT_EQ(1.0f, e8m0_to_f32(127));
    EXPECT_EQ(0x1p127f, e8m0_to_f32(254));
    EXPECT_TRUE(std::isnan(e8m0_to_f32(255)));
    EXPECT_EQ(0x00200000u, bits_of(e8m0_to_f32_half(0)));  // 2^-128
    EXPECT_EQ(0x00400000u, bits_of(e8m0_to_f32_half(1)));
    EXPECT_EQ(0x1p126f, e8m0_to_f32_half(254));
    EXPECT_TRUE(std::isnan(e8m0_to_f32_half(255)));
    for (unsigned e = 0; e < 255; e++) {
        EXPECT_EQ(ref_e8m0(uint8_t(e)), double(e8m0_to_f32(uint8_t(e)))) << e;
        EXPECT_EQ(ref_e8m0(uint8_t(e)) / 2, double(e8m0_to_f32_half(uint8_t(e)))) << e;
    }
}

TEST(NumericsFormats, F16AllCodesDecodeAndRoundTrip)
{
    for (unsigned h = 0; h < 65536; h++) {
        float f = f16_to_f32(uint16_t(h));
        expect_same_value(ref_f16(uint16_t(h)), f, "f16", h);
        if (!std::isnan(f)) {
            EXPECT_EQ(h, f32_to_f16(f)) << h;
        } else {
            EXPECT_EQ((h & 0x8000u) | 0x7e00u, f32_to_f16(f)) << h;
        }
    }
}

TEST(NumericsFormats, F16RoundingTiesOverflowAndSubnormals)
{
    EXPECT_EQ(0x3c00u, f32_to_f16(1.0f + 0x1p-11f));      // tie: to even (1.0)
    EXPECT_EQ(0x3c02u, f32_to_f16(1.0f + 3 * 0x1p-11f));  // tie: to even (1 + 2^-9)
    EXPECT_EQ(0x3c01u, f32_to_f16(1.0f + 0x1p-11f + 0x1p-20f));
    EXPECT_EQ(0x7bffu, f32_to_f16(65504.0f));
    EXPECT_EQ(0x7bffu, f32_to_f16(65519.99f));
    EXPECT_EQ(0x7c00u, f32_to_f16(65520.0f));  // tie with 65536 rounds to even: overflow
    EXPECT_EQ(0xfc00u, f32_to_f16(-1e10f));
    EXPECT_EQ(0x7c00u, f32_to_f16(INFINITY));
    EXPECT_EQ(0x0000u, f32_to_f16(0x1p-25f));  // tie with 0: even
    EXPECT_EQ(0x0001u, f32_to_f16(0x1p-25f + 0x1p-40f));
    EXPECT_EQ(0x0002u, f32_to_f16(3 * 0x1p-25f));  // tie between 1 and 2 units: even
    EXPECT_EQ(0x8000u, f32_to_f16(-0x1p-30f));
    EXPECT_EQ(0x0400u, f32_to_f16(0x1p-14f - 0x1p-26f));  // rounds up into the normals
    EXPECT_EQ(0x7e00u, f32_to_f16(NAN));
    std::mt19937 rng(1);
    std::uniform_int_distribution<uint32_t> bits;
    std::vector<double> f16_values(65536);
    for (unsigned c = 0; c < 65536; c++) f16_values[c] = ref_f16(uint16_t(c));
    auto decode = [&](unsigned c) { return f16_values[c]; };
    for (int i = 0; i < 2000; i++) {
        uint32_t r = bits(rng);
        // exponents 2^-30 .. 2^16: subnormal halves, normal halves and the overflow edge
        float f = float_of((r & 0x807fffffu) | ((97u + (r >> 23) % 47u) << 23));
        if (std::fabs(f) > 65504.0f || std::isnan(f)) continue;
        expect_nearest_even(f, f32_to_f16(f), 65536, decode, 1, "f16");
        if (HasFailure()) break;
    }
}

TEST(NumericsFormats, BF16AllCodesDecodeRoundingAndNaN)
{
    for (unsigned h = 0; h < 65536; h++) {
        float f = bf16_to_f32(uint16_t(h));
        expect_same_value(ref_bf16(uint16_t(h)), f, "bf16", h);
        if (!std::isnan(f)) {
            EXPECT_EQ(h, f32_to_bf16(f)) << h;
        }
    }
    EXPECT_EQ(0x3f80u, f32_to_bf16(1.0f + 0x1p-8f));      // tie: even
    EXPECT_EQ(0x3f82u, f32_to_bf16(1.0f + 3 * 0x1p-8f));  // tie: even
    EXPECT_EQ(0x3f81u, f32_to_bf16(1.0f + 0x1p-8f + 0x1p-20f));
    EXPECT_EQ(0x7f80u, f32_to_bf16(float_of(0x7f7fffffu)));  // FLT_MAX rounds to inf
    EXPECT_EQ(0x7f7fu, f32_to_bf16(float_of(0x7f7f7fffu)));
    uint16_t n = f32_to_bf16(float_of(0x7f800001u));  // NaN whose payload is only in the low half
    EXPECT_TRUE(std::isnan(bf16_to_f32(n)));
    EXPECT_EQ(0xffc0u, f32_to_bf16(float_of(0xffc00000u)));
}

TEST(NumericsFormats, Fp8AndFp4EncodersRoundTripEveryCode)
{
    for (unsigned c = 0; c < 256; c++) {
        if (!std::isnan(ref_e4m3(uint8_t(c)))) {
            EXPECT_EQ(c, f32_to_fp8_e4m3(fp8_e4m3_to_f32(uint8_t(c)))) << c;
        }
        double v5 = ref_e5m2(uint8_t(c));
        if (!std::isnan(v5) && !std::isinf(v5)) {
            EXPECT_EQ(c, f32_to_fp8_e5m2(fp8_e5m2_to_f32(uint8_t(c)))) << c;
        }
    }
    for (unsigned c = 0; c < 16; c++)
        EXPECT_EQ(c, f32_to_fp4_e2m1(fp4_e2m1_to_f32(uint8_t(c)))) << c;
}

TEST(NumericsFormats, Fp8AndFp4EncodersRoundToNearestEvenAndSaturate)
{
    // E2M1 ties
    EXPECT_EQ(0x4u, f32_to_fp4_e2m1(2.5f));    // 2 | 3: 2 is even
    EXPECT_EQ(0x6u, f32_to_fp4_e2m1(3.5f));    // 3 | 4: 4 is even
    EXPECT_EQ(0x6u, f32_to_fp4_e2m1(5.0f));    // 4 | 6: 4 is even
    EXPECT_EQ(0x0u, f32_to_fp4_e2m1(0.25f));   // 0 | 0.5: 0 is even
    EXPECT_EQ(0x2u, f32_to_fp4_e2m1(0.75f));   // 0.5 | 1: 1 is even
    EXPECT_EQ(0x2u, f32_to_fp4_e2m1(1.25f));   // 1 | 1.5: 1 is even
    EXPECT_EQ(0xcu, f32_to_fp4_e2m1(-1.75f));  // -1.5 | -2: -2 is even
    EXPECT_EQ(0x7u, f32_to_fp4_e2m1(7.0f));    // saturates
    EXPECT_EQ(0xfu, f32_to_fp4_e2m1(-INFINITY));
    EXPECT_EQ(0x7eu, f32_to_fp8_e4m3(464.0f));
    EXPECT_EQ(0x7eu, f32_to_fp8_e4m3(1e9f));
    EXPECT_EQ(0xfeu, f32_to_fp8_e4m3(-INFINITY));
    EXPECT_EQ(0x00u, f32_to_fp8_e4m3(0x1p-10f));  // half the smallest subnormal: even
    EXPECT_EQ(0x7fu, f32_to_fp8_e4m3(NAN));
    EXPECT_EQ(0x7bu, f32_to_fp8_e5m2(65536.0f));
    EXPECT_EQ(0x7bu, f32_to_fp8_e5m2(INFINITY));
    // nearest-even by exhaustive comparison with every code
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> mag(-12.0f, 9.0f);
    std::uniform_int_distribution<int> sign(0, 1);
    for (int i = 0; i < 4000 && !HasFailure(); i++) {
        float x = std::exp2(mag(rng)) * (sign(rng) ? -1.0f : 1.0f);
        if (std::fabs(x) <= 448.0f)
            expect_nearest_even(
                x, f32_to_fp8_e4m3(x), 256, [](unsigned c) { return ref_e4m3(uint8_t(c)); }, 1,
                "e4m3");
        expect_nearest_even(
            x, f32_to_fp8_e5m2(x), 256, [](unsigned c) { return ref_e5m2(uint8_t(c)); }, 1, "e5m2");
        if (std::fabs(x) <= 6.0f)
            expect_nearest_even(
                x, f32_to_fp4_e2m1(x), 16, [](unsigned c) { return ref_e2m1(uint8_t(c)); }, 1,
                "e2m1");
    }
}
