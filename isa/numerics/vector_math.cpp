// The vector engine's transcendental functions (docs/numerics.md, "Vector math"). The
// scalar and AVX2 versions perform the same IEEE operations in the same order (fused where
// written as fma, nowhere else: this file is built with -ffp-contract=off), so they agree
// bit for bit. NaN inputs give the canonical NaN.
#include <jal/isa/tile_math.hpp>

#include "bits.hpp"
#include "kernels.hpp"

#include <cmath>

#if defined(__x86_64__)
#include <immintrin.h>
#define JAL_AVX2 __attribute__((target("avx2,fma,f16c")))
#endif

namespace jal::numerics {

namespace {

// exp(x) = 2^n * e^r, n = round(x / ln 2), r = x - n ln 2 in [-ln2/2, ln2/2] (Cody-Waite
// with ln 2 = C1 + C2; x - n C1 is exact); e^r = 1 + q, q = r + r^2 P(r) with Cephes' expf
// polynomial. 1 + q is also kept as an unevaluated sum yh + yl (exact), so sigmoid and silu
// can divide without the error of a rounded exp. 2^n is applied in two exact-exponent steps
// (s1 * s2) so that subnormal results round once.
constexpr float kExpHi = 89.0f;    // exp(89) overflows; larger x give inf as well
constexpr float kExpLo = -150.0f;  // exp(-150) rounds to 0, and so does x exp(x)
constexpr float kLog2e = 0x1.715476p+0f;
constexpr float kRound = 0x1.8p23f;   // adding it rounds a float of magnitude < 2^22 to an integer
constexpr float kC1 = 0x1.62e43p-1f;  // float(ln 2)
constexpr float kC2 = -0x1.05c61p-29f;  // ln 2 - C1
constexpr float kP0 = 1.9875691500e-4f, kP1 = 1.3981999507e-3f, kP2 = 8.3334519073e-3f,
                kP3 = 4.1665795894e-2f, kP4 = 1.6666665459e-1f, kP5 = 5.0000001201e-1f;

struct ExpParts {
    float yh, yl;  // e^r = yh + yl
    float s1, s2;  // 2^n = s1 * s2
};

ExpParts exp_parts(float x)
{
    float xc = x > kExpHi ? kExpHi : (x < kExpLo ? kExpLo : x);
    float t = std::fma(xc, kLog2e, kRound);
    int32_t n = int32_t(to_bits(t)) - int32_t(to_bits(kRound));
    float nf = t - kRound;
    float r = std::fma(-nf, kC1, xc);
    r = std::fma(-nf, kC2, r);
    float p = std::fma(kP0, r, kP1);
    p = std::fma(p, r, kP2);
    p = std::fma(p, r, kP3);
    p = std::fma(p, r, kP4);
    p = std::fma(p, r, kP5);
    float r2 = r * r;
    float q = std::fma(p, r2, r);
    float yh = 1.0f + q;
    float yl = q - (yh - 1.0f);
    int32_t n1 = n >> 1, n2 = n - n1;
    return {yh, yl, from_bits(uint32_t(n1 + 127) << 23), from_bits(uint32_t(n2 + 127) << 23)};
}

// (nh + nl) / (dh + dl), rounded once more than the quotient: one Newton correction.
float div_pair(float nh, float nl, float dh, float dl)
{
    float q = nh / dh;
    float r = std::fma(-q, dh, nh);
    r = std::fma(-q, dl, r + nl);
    return q + r / dh;
}

// sigmoid and silu on e = exp(-|x|) <= 1:
//   sigmoid(x) = 1 / (1 + e) for x >= 0,  e / (1 + e) for x < 0;
//   silu(x)    = x / (1 + e) for x >= 0,  (x e) / (1 + e) for x < 0;
// e, 1 + e and x e are carried as exact pairs, the quotient is computed unscaled and 2^n
// applied last.
float sigmoid_silu_core(float x, bool silu)
{
    ExpParts e = exp_parts(-std::fabs(x));
    float eh = (e.yh * e.s1) * e.s2, el = (e.yl * e.s1) * e.s2;
    float dh = 1.0f + eh;
    float dl = (eh - (dh - 1.0f)) + el;
    bool neg = x < 0.0f;
    float nh, nl;
    if (!neg) {
        nh = silu ? x : 1.0f;
        nl = 0.0f;
    } else if (!silu) {
        nh = e.yh;
        nl = e.yl;
    } else {
        float xc = x < kExpLo ? kExpLo : x;
        nh = xc * e.yh;
        nl = std::fma(xc, e.yh, -nh) + xc * e.yl;
    }
    float q = div_pair(nh, nl, dh, dl);
    if (neg) q = (q * e.s1) * e.s2;
    return q;
}

float canonical_nan()
{
    return from_bits(kCanonicalNaN);
}

}  // namespace

void exp_scalar(const float* x, float* y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        ExpParts e = exp_parts(v);
        y[i] = std::isnan(v) ? canonical_nan() : (e.yh * e.s1) * e.s2;
    }
}

void sigmoid_scalar(const float* x, float* y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = std::isnan(v) ? canonical_nan() : sigmoid_silu_core(v, false);
    }
}

void silu_scalar(const float* x, float* y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        float s = sigmoid_silu_core(v, true);
        // +inf and +-0 are their own silu (the pair correction would turn -0 into +0)
        y[i] = std::isnan(v) ? canonical_nan() : (v == INFINITY || v == 0.0f ? v : s);
    }
}

#if defined(__x86_64__)

namespace {

struct ExpParts8 {
    __m256 yh, yl, s1, s2;
};

JAL_AVX2 inline ExpParts8 exp_parts8(__m256 x)
{
    __m256 xc = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(kExpLo)), _mm256_set1_ps(kExpHi));
    __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(kLog2e), _mm256_set1_ps(kRound));
    __m256i n =
        _mm256_sub_epi32(_mm256_castps_si256(t), _mm256_castps_si256(_mm256_set1_ps(kRound)));
    __m256 nf = _mm256_sub_ps(t, _mm256_set1_ps(kRound));
    __m256 r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(kC1), xc);
    r = _mm256_fnmadd_ps(nf, _mm256_set1_ps(kC2), r);
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(kP0), r, _mm256_set1_ps(kP1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
    __m256 r2 = _mm256_mul_ps(r, r);
    __m256 q = _mm256_fmadd_ps(p, r2, r);
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 yh = _mm256_add_ps(one, q);
    __m256 yl = _mm256_sub_ps(q, _mm256_sub_ps(yh, one));
    __m256i n1 = _mm256_srai_epi32(n, 1);
    __m256i n2 = _mm256_sub_epi32(n, n1);
    __m256i bias = _mm256_set1_epi32(127);
    return {yh, yl, _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23)),
            _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23))};
}

JAL_AVX2 inline __m256 scale8(__m256 v, const ExpParts8& e)
{
    return _mm256_mul_ps(_mm256_mul_ps(v, e.s1), e.s2);
}

JAL_AVX2 inline __m256 div_pair8(__m256 nh, __m256 nl, __m256 dh, __m256 dl)
{
    __m256 q = _mm256_div_ps(nh, dh);
    __m256 r = _mm256_fnmadd_ps(q, dh, nh);
    r = _mm256_fnmadd_ps(q, dl, _mm256_add_ps(r, nl));
    return _mm256_add_ps(q, _mm256_div_ps(r, dh));
}

JAL_AVX2 inline __m256 sigmoid_silu_core8(__m256 x, bool silu)
{
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    __m256 ax = _mm256_and_ps(x, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
    ExpParts8 e = exp_parts8(_mm256_sub_ps(zero, ax));
    __m256 eh = scale8(e.yh, e), el = scale8(e.yl, e);
    __m256 dh = _mm256_add_ps(one, eh);
    __m256 dl = _mm256_add_ps(_mm256_sub_ps(eh, _mm256_sub_ps(dh, one)), el);
    __m256 neg = _mm256_cmp_ps(x, zero, _CMP_LT_OQ);
    __m256 nh, nl;
    if (!silu) {
        nh = _mm256_blendv_ps(one, e.yh, neg);
        nl = _mm256_blendv_ps(zero, e.yl, neg);
    } else {
        __m256 xc = _mm256_max_ps(x, _mm256_set1_ps(kExpLo));
        __m256 ph = _mm256_mul_ps(xc, e.yh);
        __m256 pl = _mm256_add_ps(_mm256_fmsub_ps(xc, e.yh, ph), _mm256_mul_ps(xc, e.yl));
        nh = _mm256_blendv_ps(x, ph, neg);
        nl = _mm256_blendv_ps(zero, pl, neg);
    }
    __m256 q = div_pair8(nh, nl, dh, dl);
    return _mm256_blendv_ps(q, scale8(q, e), neg);
}

JAL_AVX2 inline __m256 nan_to_canonical(__m256 x, __m256 v)
{
    __m256 isnan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_blendv_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(int(kCanonicalNaN))), isnan);
}

JAL_AVX2 void exp_avx2_impl(const float* x, float* y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        ExpParts8 e = exp_parts8(v);
        _mm256_storeu_ps(y + i, nan_to_canonical(v, scale8(e.yh, e)));
    }
    if (i < n) exp_scalar(x + i, y + i, n - i);
}

JAL_AVX2 void sigmoid_avx2_impl(const float* x, float* y, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(y + i, nan_to_canonical(v, sigmoid_silu_core8(v, false)));
    }
    if (i < n) sigmoid_scalar(x + i, y + i, n - i);
}

JAL_AVX2 void silu_avx2_impl(const float* x, float* y, size_t n)
{
    size_t i = 0;
    const __m256 inf = _mm256_set1_ps(INFINITY);
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_loadu_ps(x + i);
        __m256 s = sigmoid_silu_core8(v, true);
        __m256 own = _mm256_or_ps(_mm256_cmp_ps(v, inf, _CMP_EQ_OQ),
                                  _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_EQ_OQ));
        s = _mm256_blendv_ps(s, v, own);
        _mm256_storeu_ps(y + i, nan_to_canonical(v, s));
    }
    if (i < n) silu_scalar(x + i, y + i, n - i);
}

}  // namespace

void exp_avx2(const float* x, float* y, size_t n)
{
    exp_avx2_impl(x, y, n);
}
void sigmoid_avx2(const float* x, float* y, size_t n)
{
    sigmoid_avx2_impl(x, y, n);
}
void silu_avx2(const float* x, float* y, size_t n)
{
    silu_avx2_impl(x, y, n);
}

#else

void exp_avx2(const float* x, float* y, size_t n)
{
    exp_scalar(x, y, n);
}
void sigmoid_avx2(const float* x, float* y, size_t n)
{
    sigmoid_scalar(x, y, n);
}
void silu_avx2(const float* x, float* y, size_t n)
{
    silu_scalar(x, y, n);
}

#endif

void exp_f32(const float* x, float* y, size_t n)
{
    (active_isa() != Isa::scalar ? exp_avx2 : exp_scalar)(x, y, n);
}
void sigmoid_f32(const float* x, float* y, size_t n)
{
    (active_isa() != Isa::scalar ? sigmoid_avx2 : sigmoid_scalar)(x, y, n);
}
void silu_f32(const float* x, float* y, size_t n)
{
    (active_isa() != Isa::scalar ? silu_avx2 : silu_scalar)(x, y, n);
}

// Correctly rounded compositions: IEEE division and square root round once in every path.
void rsqrt_f32(const float* x, float* y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = std::isnan(v) ? canonical_nan() : 1.0f / std::sqrt(v);
        if (std::isnan(y[i])) y[i] = canonical_nan();
    }
}
void recip_f32(const float* x, float* y, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float v = x[i];
        y[i] = std::isnan(v) ? canonical_nan() : 1.0f / v;
    }
}

}  // namespace jal::numerics
