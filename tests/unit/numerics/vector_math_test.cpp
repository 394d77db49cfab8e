// The vector engine's functions: within the documented 2-ulp bound of the exact value
// (double precision) over a dense sweep of all floats, special values, and identical
// bits in the scalar and AVX2 paths.
#include <jal/isa/tile_math.hpp>

#include "reference_decode.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

using namespace jal::numerics;
using namespace numerics_test;

namespace {

// Every 1021st float bit pattern (about 4 million values, all binades and signs), plus
// 2^-8 steps through the range where the functions are neither 0, 1, x nor overflow.
std::vector<float> sweep()
{
    std::vector<float> x;
    for (uint64_t u = 0; u < (1ull << 32); u += 1021) {
        float f = float_of(uint32_t(u));
        if (!std::isnan(f)) x.push_back(f);
    }
    for (float f = -120.0f; f <= 100.0f; f += 0.00390625f) x.push_back(f);
    return x;
}

double ulp_of(double v)
{
    v = std::fabs(v);
    if (v < 0x1p-126) return 0x1p-149;
    int e;
    std::frexp(v, &e);
    return std::ldexp(1.0, e - 24);
}

// Error of got against the exact value, in ulps of the exact value; results beyond the
// largest float count as exact when they are infinite.
double ulp_error(float got, double exact)
{
    const double max_float = 0x1.fffffep127;
    if (std::fabs(exact) > max_float * (1 + 0x1p-25)) {
        return std::isinf(got) && (got > 0) == (exact > 0) ? 0.0 : 1e9;
    }
    if (std::isnan(got) || std::isinf(got)) return 1e9;
    return std::fabs(double(got) - exact) / ulp_of(exact);
}

double exact_sigmoid(double x)
{
    return x >= 0 ? 1.0 / (1.0 + std::exp(-x)) : std::exp(x) / (1.0 + std::exp(x));
}

using Fn = void (*)(const float*, float*, size_t);

void check_bound(const char* what, Fn fn, const std::function<double(double)>& exact)
{
    static const std::vector<float> x = sweep();
    for (Isa isa : {Isa::scalar, Isa::avx2}) {
        force_isa(isa);
        std::vector<float> y(x.size());
        fn(x.data(), y.data(), x.size());
        double worst = 0;
        float worst_x = 0;
        for (size_t i = 0; i < x.size(); i++) {
            double e = ulp_error(y[i], exact(x[i]));
            if (e > worst) {
                worst = e;
                worst_x = x[i];
            }
        }
        EXPECT_LE(worst, 2.0) << what << " worst at x = " << worst_x << " (" << std::hexfloat
                              << worst_x << ")";
        testing::Test::RecordProperty(std::string(what) +
                                          (isa == Isa::scalar ? "_scalar" : "_avx2") + "_max_ulp",
                                      std::to_string(worst));
    }
    force_isa(best_isa());
}

void check_paths_identical(const char* what, Fn fn)
{
    if (!host_has_avx2()) GTEST_SKIP() << "no AVX2 on this host: only the scalar path exists";
    std::vector<float> x;
    for (uint64_t u = 0; u < (1ull << 32); u += 4093)
        x.push_back(float_of(uint32_t(u)));  // NaNs included
    for (size_t n : {1, 7, 9, 15}) {         // tails that the vector loop leaves to scalar code
        x.insert(x.end(), x.begin(), x.begin() + n);
        std::vector<float> s(x.size()), v(x.size());
        force_isa(Isa::scalar);
        fn(x.data(), s.data(), x.size());
        force_isa(Isa::avx2);
        fn(x.data(), v.data(), x.size());
        for (size_t i = 0; i < x.size(); i++)
            if (bits_of(s[i]) != bits_of(v[i])) {
                ADD_FAILURE() << what << " differs at x = " << std::hexfloat << x[i] << ": scalar "
                              << s[i] << " avx2 " << v[i];
                break;
            }
    }
    force_isa(Isa::avx2);
}

float one(Fn fn, float x)
{
    float y;
    fn(&x, &y, 1);
    return y;
}

}  // namespace

TEST(NumericsVectorMath, ExpWithinTwoUlp)
{
    check_bound("exp", exp_f32, [](double x) { return std::exp(x); });
}

TEST(NumericsVectorMath, SigmoidWithinTwoUlp)
{
    check_bound("sigmoid", sigmoid_f32, exact_sigmoid);
}

TEST(NumericsVectorMath, SiluWithinTwoUlp)
{
    check_bound("silu", silu_f32,
                [](double x) { return std::isinf(x) ? (x > 0 ? x : -0.0) : x * exact_sigmoid(x); });
}

TEST(NumericsVectorMath, ScalarAndAvx2Identical)
{
    check_paths_identical("exp", exp_f32);
    check_paths_identical("sigmoid", sigmoid_f32);
    check_paths_identical("silu", silu_f32);
    check_paths_identical("rsqrt", rsqrt_f32);
    check_paths_identical("recip", recip_f32);
}

TEST(NumericsVectorMath, SpecialValues)
{
    for (Isa isa : {Isa::scalar, Isa::avx2}) {
        force_isa(isa);
        EXPECT_EQ(1.0f, one(exp_f32, 0.0f));
        EXPECT_EQ(1.0f, one(exp_f32, -0.0f));
        EXPECT_EQ(INFINITY, one(exp_f32, INFINITY));
        EXPECT_EQ(INFINITY, one(exp_f32, 89.0f));
        EXPECT_EQ(0.0f, one(exp_f32, -INFINITY));
        EXPECT_EQ(0.0f, one(exp_f32, -104.0f));
        EXPECT_EQ(0x7fc00000u, bits_of(one(exp_f32, float_of(0xff812345u))));
        EXPECT_EQ(0.5f, one(sigmoid_f32, 0.0f));
        EXPECT_EQ(1.0f, one(sigmoid_f32, INFINITY));
        EXPECT_EQ(0.0f, one(sigmoid_f32, -INFINITY));
        EXPECT_EQ(0x7fc00000u, bits_of(one(sigmoid_f32, NAN)));
        EXPECT_EQ(INFINITY, one(silu_f32, INFINITY));
        EXPECT_EQ(0x80000000u, bits_of(one(silu_f32, -INFINITY)));
        EXPECT_EQ(0x80000000u, bits_of(one(silu_f32, -0.0f)));
        EXPECT_EQ(1e30f, one(silu_f32, 1e30f));
        EXPECT_EQ(0.5f, one(rsqrt_f32, 4.0f));
        EXPECT_EQ(INFINITY, one(rsqrt_f32, 0.0f));
        EXPECT_EQ(0x7fc00000u, bits_of(one(rsqrt_f32, -1.0f)));
        EXPECT_EQ(-INFINITY, one(recip_f32, -0.0f));
        EXPECT_EQ(0.25f, one(recip_f32, 4.0f));
        EXPECT_EQ(0x7fc00000u, bits_of(one(recip_f32, float_of(0x7f800001u))));
    }
    force_isa(best_isa());
}

TEST(NumericsVectorMath, RsqrtAndRecipCorrectlyRounded)
{
    std::vector<float> x;
    for (uint64_t u = 0; u < 0x7f800000ull; u += 4099) x.push_back(float_of(uint32_t(u)));
    std::vector<float> r(x.size()), q(x.size());
    rsqrt_f32(x.data(), r.data(), x.size());
    recip_f32(x.data(), q.data(), x.size());
    for (size_t i = 0; i < x.size(); i++) {
        // rsqrt(x) = RN(1 / RN(sqrt(x))): two roundings, within 1.5 ulp of the exact value
        float s = float(std::sqrt(double(x[i])));  // RN(sqrt(x)): double rounding is innocuous here
        EXPECT_EQ(bits_of(float(1.0 / double(s))), bits_of(r[i])) << x[i];
        EXPECT_LE(ulp_error(r[i], 1.0 / std::sqrt(double(x[i]))), 1.5) << x[i];
        EXPECT_EQ(bits_of(float(1.0 / double(x[i]))), bits_of(q[i])) << x[i];
        if (HasFailure()) break;
    }
}
